"""What a worker's log says about cron slots, manual retries, a shutdown's requeue and a quiet
spell: times a person can read, no "attempt 2/1", the jids put back, no line a second."""

from __future__ import annotations

import functools
import re
import signal
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner, Result

from cogworker.cli import cli
from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from delivery.conftest import APP_HEADER, StartAppWorker
from helpers.workers import Ledger, WorkerProcess, wait_until
from runtime.support import payload, push_raw

pytestmark = pytest.mark.slow

JOBS = APP_HEADER + '''

@app.job(name="Tick")
def tick():
    record("tick", "Tick", "ran")


@app.job(name="Doomed", retry=False)
def doomed(tag):
    record(tag, "Doomed", "ran")
    raise KeyError(tag)


@app.job(name="Hold")
def hold(tag):
    record(tag, "Hold", "start")
    while not os.path.exists(os.path.join(os.environ["TEST_DIR"], "gate")):
        time.sleep(0.02)
    record(tag, "Hold", "finish")


if os.environ.get("TEST_CRON"):
    app.periodic("* * * * * *", "Tick")
'''

def _logged(worker: WorkerProcess, text: str) -> bool:
    return text in worker.output()


_ISO_SLOT = re.compile(r"enqueued slot (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00) jid=")


def test_a_cron_slot_is_logged_as_an_iso_time(
    redis_url: str, ledger: Ledger, app_worker: StartAppWorker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_CRON", "1")
    worker = app_worker(JOBS, redis_url, "-c", "1")
    wait_until(lambda: ledger.count("ran") >= 1, 20, lambda: worker.output()[-3000:])
    assert worker.stop() == 0
    assert _ISO_SLOT.search(worker.output()), worker.output()[-3000:]
    assert not re.search(r"slot \d{9,}", worker.output())


def test_a_job_retried_by_hand_from_dead_is_logged_as_a_manual_retry(
    redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema,
    ledger: Ledger, app_worker: StartAppWorker, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def command(*args: str) -> Result:
        return runner.invoke(cli, [*args, "--redis-url", redis_url, "--namespace", namespace],
                             catch_exceptions=False)

    jid = new_jid()
    push_raw(redis_client, keys, "default", payload("Doomed", ["d"], "default", jid, retry=False))
    worker = app_worker(JOBS, redis_url, "-c", "1")
    wait_until(lambda: redis_client.zcard(keys.dead) == 1, 20, lambda: worker.output()[-3000:])
    assert command("dead", "retry", jid).exit_code == 0
    wait_until(lambda: ledger.count("ran") == 2 and redis_client.zcard(keys.dead) == 1, 20,
               lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    dead_lines = [line for line in worker.output().splitlines()
                  if f"dead: Doomed jid={jid}" in line]
    assert len(dead_lines) == 2
    assert dead_lines[0].endswith("(no retries left, attempt 1/1)")
    assert dead_lines[1].endswith("(no retries left, manual retry)")
    [record] = redis_client.zrange(keys.dead, 0, -1)
    assert b"manual_retry" not in record  # the mark describes one run, not the record


def test_the_shutdown_requeue_names_the_jobs_it_put_back(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, tmp_path: Path,
) -> None:
    jids = [new_jid(), new_jid()]
    push_raw(redis_client, keys, "default", *(payload("Hold", [n], "default", jid)
                                              for n, jid in enumerate(jids)))
    worker = app_worker(JOBS, redis_url, "-c", "2", timeout=0.5)
    wait_until(lambda: ledger.count("start") == 2, 20, lambda: worker.output()[-3000:])
    assert worker.stop() == 0
    (tmp_path / "gate").touch()

    [line] = [line for line in worker.output().splitlines() if "unfinished at shutdown" in line]
    assert "requeued 2 job(s) unfinished at shutdown: " in line
    assert sorted(re.findall(r"jid=([0-9a-f]{24})", line)) == sorted(jids)


def test_a_quiet_worker_says_once_that_it_does_not_move_scheduled_jobs(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema,
    app_worker: StartAppWorker,
) -> None:
    worker = app_worker(JOBS, redis_url, "-c", "1", "--log-level", "debug")
    worker.signal(signal.SIGTSTP)
    wait_until(lambda: "Received quiet signal" in worker.output(), 20,
               lambda: worker.output()[-3000:])
    # Three orphan checks, each seen by the dead process it recovers, prove three polls.
    for number in range(3):
        ghost = f"ghost-{number}:1:{number:012d}"
        redis_client.sadd(keys.inprogress_identities, ghost)
        redis_client.lpush(keys.inprogress(ghost), payload("Tick", [], "default", new_jid()))
        wait_until(functools.partial(_logged, worker, f"dead process {ghost}"), 20,
                   lambda: worker.output()[-3000:])
    assert worker.stop() == 0
    assert worker.output().count("quiet: scheduled and retry jobs are not moved") == 1
