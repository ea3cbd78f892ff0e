"""``async def`` jobs in a real worker: one event loop owned by the worker, mixed with sync
jobs, each holding its processor slot, failures routed like any other, requeued at stop."""

from __future__ import annotations

import signal

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.workers import Event, Ledger, wait_until
from runtime.support import (
    APP_HEADER,
    StartWorker,
    jids_on,
    payload,
    push_raw,
    sorted_set_jobs,
    wait_exit,
)

pytestmark = pytest.mark.slow

MIXED_JOBS = APP_HEADER + '''
import asyncio
import threading


def where():
    try:
        loop = id(asyncio.get_running_loop())
    except RuntimeError:
        loop = None
    return f"{loop}|{threading.current_thread().name}"


@app.job(name="Nap")
class Nap(cogworker.Job):
    async def perform(self, seconds):
        record(self.jid, "Nap", "start", where())
        await asyncio.sleep(seconds)
        record(self.jid, "Nap", "done", where())


@app.job(name="Doze")
class Doze(cogworker.Job):
    def perform(self, seconds):
        record(self.jid, "Doze", "start", where())
        time.sleep(seconds)
        record(self.jid, "Doze", "done", where())


@app.job(name="Broken")
class Broken(cogworker.Job):
    async def perform(self):
        await asyncio.sleep(0)
        raise LookupError("async failure")
'''


def most_in_flight(events: list[Event]) -> int:
    """The most jobs between their ``start`` and ``done`` records at once, in ledger order."""
    running = peak = 0
    for event in events:
        running += {"start": 1, "done": -1}.get(event.event, 0)
        peak = max(peak, running)
    return peak


def test_async_and_sync_jobs_share_the_processor_slots(
    start_worker: StartWorker, ledger: Ledger, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    naps, dozes = [new_jid() for _ in range(4)], [new_jid() for _ in range(2)]
    broken = new_jid()
    push_raw(redis_client, keys, "default",
             *(payload("Nap", [0.8], "default", jid) for jid in naps),
             *(payload("Doze", [0.8], "default", jid) for jid in dozes),
             payload("Broken", [], "default", broken, retry=False))
    worker = start_worker(MIXED_JOBS, "-c", "2")

    wait_until(lambda: ledger.count("done") == 6 and redis_client.zcard(keys.dead) == 1, 20,
               worker.output)
    assert worker.stop() == 0

    events = ledger.events()
    assert most_in_flight(events) == 2  # both slots used, never more than -c 2
    nap_places = {e.detail for e in events if e.name == "Nap"}
    loops = {place.split("|")[0] for place in nap_places}
    threads = {place.split("|")[1] for place in nap_places}
    assert len(loops) == 1 and loops != {"None"}  # one loop for every async job
    assert threads == {"cogworker-asyncio"}  # the worker's loop thread, not a processor's
    for event in events:
        if event.name == "Doze":
            assert event.detail.startswith("None|cogworker-processor-")
    assert sorted(e.jid for e in events if e.event == "done") == sorted(naps + dozes)
    [(dead, _)] = sorted_set_jobs(redis_client, keys.dead)
    assert (dead["jid"], dead["error_class"], dead["error_message"]) == (
        broken, "LookupError", "async failure")


def test_an_async_job_still_running_at_the_timeout_is_requeued(
    start_worker: StartWorker, ledger: Ledger, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    jid = new_jid()
    push_raw(redis_client, keys, "default", payload("Nap", [10], "default", jid))
    worker = start_worker(MIXED_JOBS, "-c", "2", "-t", "1")
    wait_until(lambda: ledger.count("start") == 1, 10, worker.output)

    worker.signal(signal.SIGTERM)

    assert wait_exit(worker, 20) == 0, worker.output()[-3000:]
    assert ledger.count("done") == 0
    assert jids_on(redis_client, keys.queue("default")) == [jid]
    assert "Traceback" not in worker.output()
