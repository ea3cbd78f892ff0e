"""A paused queue is skipped by a running worker, and worked again once resumed.

A fetch reads the paused set when it starts, so a pause reaches a worker at its next fetch
(within the 2 s a fetch blocks); here the queue is paused before the worker starts.
"""

from __future__ import annotations

import time

import pytest
import redis

from cogworker.api import Queue
from cogworker.app import App
from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, wait_until
from runtime.support import WORK_JOBS, StartWorker, payload, push_raw

pytestmark = pytest.mark.slow

PAUSE_OBSERVED = 1.5  # seconds a paused queue is watched: several fetch rounds


@pytest.mark.parametrize("fetch_args", [(), ("--plugin", "basic")], ids=["reliable", "basic"])
def test_a_paused_queue_is_skipped_until_resumed(
    start_worker: StartWorker, pusher: App, ledger: Ledger, redis_client: redis.Redis,
    keys: KeySchema, fetch_args: tuple[str, ...],
) -> None:
    low = Queue(pusher, "low")
    low.pause()
    held, passing = new_jid(), new_jid()
    push_raw(redis_client, keys, "low", payload("Work", [1], "low", held))
    push_raw(redis_client, keys, "high", payload("Work", [2], "high", passing))
    worker = start_worker(WORK_JOBS, "-q", "high", "-q", "low", *fetch_args)

    wait_until(lambda: ledger.count("ran") == 1, 10, worker.output)
    time.sleep(PAUSE_OBSERVED)  # the paused queue is skipped, however long we look
    assert [event.jid for event in ledger.events("ran")] == [passing]
    assert low.size() == 1

    low.resume()  # re-read by the next fetch: no restart needed
    wait_until(lambda: ledger.count("ran") == 2, 10, worker.output)
    assert worker.stop() == 0
    assert [event.jid for event in ledger.events("ran")] == [passing, held]
