"""Job time limits with real worker processes: a sync job interrupted in its thread, an
async job cancelled, and a job stuck in one C call replaced by the supervisor and filed as
failed, never re-run as an orphan."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import cast

import pytest
import redis

from cogworker.redis.keys import KeySchema
from delivery.conftest import APP_HEADER, MakeClient, StartAppWorker
from delivery.supervised import kill_all_children, started_children, wait_children_started
from delivery.support import executions, finished_jids
from helpers.workers import Ledger, WorkerProcess, wait_until

pytestmark = pytest.mark.slow

LIMITED_APP = """
import asyncio


@app.job(name="Loop", time_limit=0.5, retry=1)
def loop(tag):
    # Pure Python between short sleeps: the exception lands within one sleep.
    record(tag, "Loop", "start")
    for _ in range(3000):
        time.sleep(0.01)
    record(tag, "Loop", "finish")


@app.job(name="Wait", time_limit=0.5, retry=1)
async def wait(tag):
    record(tag, "Wait", "start")
    await asyncio.sleep(30)
    record(tag, "Wait", "finish")


@app.job(name="Stuck", time_limit=0.5, retry=1)
def stuck(tag):
    # One C call: nothing raised into this thread takes effect before it returns.
    record(tag, "Stuck", "start")
    time.sleep(120)
    record(tag, "Stuck", "finish")


@app.job(name="Work")
def work(tag, seconds):
    record(tag, "Work", "start")
    time.sleep(seconds)
    record(tag, "Work", "finish")
"""

SETTINGS = {"orphan_threshold": 300.0, "heartbeat_ttl": 30.0, "heartbeat_interval": 0.5,
            "time_limit_grace": 1.0}


def _retries(client: redis.Redis, keys: KeySchema) -> dict[str, dict[str, object]]:
    entries = [json.loads(cast(bytes, raw)) for raw in client.zrange(keys.retry, 0, -1)]
    return {str(entry["args"][0]): entry for entry in entries}


@pytest.fixture
def supervisors() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for supervisor in started:
        supervisor.close()
        kill_all_children(supervisor)


def test_sync_and_async_jobs_over_their_limit_fail_with_job_timeout_error(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, make_client: MakeClient,
) -> None:
    worker = app_worker(APP_HEADER + LIMITED_APP, redis_url, "-c", "3", **SETTINGS)
    client = make_client(redis_url)
    client.push({"class": "Loop", "args": ["loop"], "retry": 1})
    client.push({"class": "Wait", "args": ["wait"], "retry": 1})
    client.push({"class": "Work", "args": ["after", 0.1]})
    wait_until(lambda: {"loop", "wait"} <= set(_retries(redis_client, keys)), 30,
               lambda: f"the limited jobs were never retried:\n{worker.output()[-3000:]}")
    wait_until(lambda: "after" in finished_jids(ledger), 30, worker.output)
    assert worker.stop() == 0

    retries = _retries(redis_client, keys)
    for tag in ("loop", "wait"):
        assert retries[tag]["error_class"] == "cogworker.core.errors.JobTimeoutError"
        assert "time limit of 0.5 s" in str(retries[tag]["error_message"])
        assert retries[tag]["retry_count"] == 1
    runs = executions(ledger)
    assert [run.finished for run in runs["loop"]] == [None]  # cut short, once
    assert [run.finished for run in runs["wait"]] == [None]


def test_a_job_stuck_past_its_hard_limit_is_filed_as_failed_and_not_rerun_as_an_orphan(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, make_client: MakeClient, supervisors: list[WorkerProcess],
) -> None:
    supervisor = app_worker(APP_HEADER + LIMITED_APP, redis_url, "-P", "1", "-c", "3",
                            wait=False, **SETTINGS)
    supervisors.append(supervisor)
    wait_children_started(supervisor, 1)
    first_child = started_children(supervisor)[0]
    client = make_client(redis_url)
    client.push({"class": "Stuck", "args": ["stuck"], "retry": 1})
    client.push({"class": "Work", "args": ["beside", 6.0]})
    wait_until(lambda: "stuck" in _retries(redis_client, keys), 60,
               lambda: f"the stuck job was never filed:\n{supervisor.output()[-4000:]}")
    filed_seen = time.time()
    wait_until(lambda: "beside" in finished_jids(ledger), 60, supervisor.output)
    code = supervisor.stop(timeout=60)
    assert code == 0, supervisor.output()[-3000:]

    retries = _retries(redis_client, keys)
    assert retries["stuck"]["error_class"] == "cogworker.core.errors.JobTimeoutError"
    assert "orphan" not in json.dumps(retries["stuck"])
    runs = executions(ledger)
    assert len(runs["stuck"]) == 1 and runs["stuck"][0].finished is None  # not re-run
    # the job running beside it was cut short with the child and ran again on its successor
    assert runs["beside"][0].pid == first_child[0]
    assert len(runs["beside"]) == 2 and runs["beside"][1].finished is not None
    assert redis_client.llen(keys.inprogress(first_child[2])) == 0
    log = supervisor.output()
    assert "past the hard time limit" in log and "filed into retry" in log
    print(f"\nhard-stuck job (time limit 0.5 s + grace 1 s) filed into retry with "
          f"JobTimeoutError {filed_seen - runs['stuck'][0].started:.2f} s after it started")
