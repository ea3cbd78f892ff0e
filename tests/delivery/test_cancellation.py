"""Cancellation with real worker processes: the cancellation reaches a worker in another
process, a missed announcement is caught by the worker's re-read, and a cancelled job whose
process was SIGKILLed is not run again when it is recovered."""

from __future__ import annotations

import time

import pytest
import redis

from cogworker.api.cancel import CancelOutcome
from cogworker.redis.keys import KeySchema
from delivery.conftest import MakeClient, StartAppWorker
from delivery.support import held_payloads
from helpers.workers import Ledger, wait_until

pytestmark = pytest.mark.slow

CANCEL_APP = """
import os
import time

import cogworker
from ledger_client import record

app = cogworker.App(redis_url=os.environ["TEST_REDIS_URL"],
                    namespace=os.environ["TEST_NAMESPACE"],
                    plugin_options={"cancel": {"refresh_interval": 0.5}})


@app.job(name="Loop", retry=3)
def loop(tag):
    record(tag, "Loop", "start")
    job = cogworker.current_job()
    while not job.cancelled():
        time.sleep(0.01)
    record(tag, "Loop", "stopped")


@app.job(name="Sleep", retry=3)
def sleeper(tag):
    record(tag, "Sleep", "start")
    time.sleep(600)  # one C call: the flag is not looked at, the process gets killed
"""


def started(ledger: Ledger, tag: str) -> int:
    return sum(1 for event in ledger.events("start") if event.jid == tag)


def stopped(ledger: Ledger, tag: str) -> bool:
    return any(event.jid == tag for event in ledger.events("stopped"))


def nothing_waits(client: redis.Redis, keys: KeySchema) -> bool:
    return (client.llen(keys.queue("default")) == 0 and client.zcard(keys.retry) == 0
            and client.zcard(keys.dead) == 0)


def test_a_running_job_in_another_process_is_told_and_settled_as_cancelled(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, make_client: MakeClient,
) -> None:
    worker = app_worker(CANCEL_APP, redis_url, "-c", "2")
    client = make_client(redis_url)
    jid = client.push({"class": "Loop", "args": ["loop"]})
    assert jid is not None
    wait_until(lambda: started(ledger, "loop") == 1, 30, worker.output)

    assert client.cancel(jid).outcome is CancelOutcome.SIGNALLED
    wait_until(lambda: stopped(ledger, "loop"), 30, worker.output)
    worker.wait_for_output(f"cancelled: Loop jid={jid} queue=default stopped after")
    assert worker.stop() == 0
    assert nothing_waits(redis_client, keys)  # not retried, not dead
    assert started(ledger, "loop") == 1


def test_a_missed_announcement_is_caught_by_the_re_read(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, make_client: MakeClient,
) -> None:
    worker = app_worker(CANCEL_APP, redis_url, "-c", "2")
    client = make_client(redis_url)
    jid = client.push({"class": "Loop", "args": ["missed"]})
    assert jid is not None
    wait_until(lambda: started(ledger, "missed") == 1, 30, worker.output)

    # the record alone, as if the announcement was lost while the worker reconnected
    redis_client.zadd(keys.cancellations, {jid: time.time() + 600})
    wait_until(lambda: stopped(ledger, "missed"), 30, worker.output)
    assert worker.stop() == 0
    assert nothing_waits(redis_client, keys)


def test_a_cancelled_job_recovered_from_a_killed_process_does_not_run_again(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, make_client: MakeClient,
) -> None:
    first = app_worker(CANCEL_APP, redis_url, "-c", "2")
    client = make_client(redis_url)
    jid = client.push({"class": "Sleep", "args": ["sleeper"]})
    assert jid is not None
    wait_until(lambda: started(ledger, "sleeper") == 1, 30, first.output)
    assert client.cancel(jid).outcome is CancelOutcome.SIGNALLED
    first.kill()  # SIGKILL: the job is still held by the dead process

    second = app_worker(CANCEL_APP, redis_url, "-c", "2")
    second.wait_for_output(f"jid={jid} queue=default was cancelled before it started", 60)
    assert second.stop() == 0
    assert started(ledger, "sleeper") == 1  # recovered, dropped, never run again
    assert nothing_waits(redis_client, keys)
    held = [payload["jid"] for payload in held_payloads(redis_client, keys)]
    assert jid not in held
