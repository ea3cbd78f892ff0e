"""A real worker's ``start`` and ``done`` lines: written even when the process is SIGKILLed
a second after a job, all written at a graceful stop, silent when the logger is at WARNING,
and given as standard records to a handler the app installs."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, WorkerProcess, wait_until
from runtime.support import APP_HEADER, WORK_JOBS, StartWorker, payload, push_raw

pytestmark = pytest.mark.slow

# The app's own handler on the job logger: each record's message and job fields, as JSON
# lines in a file of the test's.
RECORDING_APP = APP_HEADER + '''
import json
import logging


class Recording(logging.Handler):
    def emit(self, record):
        entry = [record.getMessage(), record.jid, record.queue, record.job_class]
        with open(os.environ["TEST_RECORDS"], "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\\n")


logging.getLogger("cogworker.job").addHandler(Recording())


@app.job(name="Work")
def work(tag):
    record(tag, "Work", "ran")
'''

QUIET_JOB_LOGGER_APP = WORK_JOBS + '''
import logging

logging.getLogger("cogworker.job").setLevel(logging.WARNING)
'''


def push_work(client: redis.Redis, keys: KeySchema, count: int) -> list[str]:
    jids = [new_jid() for _ in range(count)]
    push_raw(client, keys, "default", *(payload("Work", [n], "default", jid)
                                        for n, jid in enumerate(jids)))
    return jids


def job_lines(worker: WorkerProcess) -> list[str]:
    return [line for line in worker.output().splitlines()
            if " INFO: start: " in line or " INFO: done: " in line]


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_sigkill_one_second_after_a_job_loses_none_of_its_lines(
    start_worker: StartWorker, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    log_format: str,
) -> None:
    worker = start_worker(WORK_JOBS, "-c", "2", "--log-format", log_format)
    [jid] = push_work(redis_client, keys, 1)
    wait_until(lambda: ledger.count("ran") == 1, 20, worker.output)
    # perform has returned or is about to: the done line is due now. The flush interval is
    # 0.1 s; a second later the line must be on disk, with no exit handler to write it.
    time.sleep(1.0)
    worker.kill()
    assert worker.process is not None and worker.process.returncode == -signal.SIGKILL
    if log_format == "text":
        lines = [line.split(" INFO: ", 1)[1] for line in job_lines(worker)]
        assert lines[0] == f"start: Work jid={jid} queue=default"
        assert lines[1].startswith(f"done: Work jid={jid} queue=default in ")
        assert lines[1].endswith(" ms") and len(lines) == 2
        return
    entries = [json.loads(line) for line in worker.output().splitlines()
               if line.startswith("{") and '"logger": "cogworker.job"' in line]
    assert [entry["message"].split(":")[0] for entry in entries] == ["start", "done"]
    for entry in entries:
        assert (entry["level"], entry["pid"]) == ("INFO", worker.pid)
        assert (entry["jid"], entry["queue"], entry["job_class"]) == (jid, "default", "Work")


def test_a_graceful_stop_writes_every_line(
    start_worker: StartWorker, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
) -> None:
    worker = start_worker(WORK_JOBS, "-c", "4")
    jids = push_work(redis_client, keys, 300)
    wait_until(lambda: ledger.count("ran") == len(jids), 60, worker.output)
    assert worker.stop() == 0  # at once: the last lines are still in the buffer
    lines = job_lines(worker)
    for kind in ("start", "done"):
        logged = sorted(line.split(" jid=")[1].split()[0] for line in lines
                        if f" INFO: {kind}: Work " in line)
        assert logged == sorted(jids), kind


def test_the_job_logger_at_warning_writes_no_job_line(
    start_worker: StartWorker, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
) -> None:
    worker = start_worker(QUIET_JOB_LOGGER_APP, "-c", "2")
    push_work(redis_client, keys, 20)
    wait_until(lambda: ledger.count("ran") == 20, 30, worker.output)
    assert worker.stop() == 0
    assert job_lines(worker) == []
    assert " started identity=" in worker.output()  # the other loggers still write


def test_an_apps_handler_gets_records_and_the_output_stays_the_same(
    start_worker: StartWorker, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    tmp_path: Path,
) -> None:
    records = f"{tmp_path}/records.jsonl"
    worker = start_worker(RECORDING_APP, "-c", "2", env={"TEST_RECORDS": records})
    jids = push_work(redis_client, keys, 5)
    wait_until(lambda: ledger.count("ran") == 5, 30, worker.output)
    assert worker.stop() == 0
    with open(records, encoding="utf-8") as handle:
        received = [json.loads(line) for line in handle]
    assert sorted(entry[1] for entry in received) == sorted(jids * 2)
    assert all(entry[2:] == ["default", "Work"] for entry in received)
    assert sorted(entry[0] for entry in received) == sorted(
        line.split(" INFO: ", 1)[1] for line in job_lines(worker))
