"""A full Redis (``maxmemory`` reached, ``noeviction``) refuses new data, not the draining of
it: workers go on fetching, running and acknowledging the queued jobs, which is what frees
memory, and an idle worker waits without an error a second (docs/explanation/delivery.md)."""

from __future__ import annotations

import pytest
import redis
import redis.exceptions as rex

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from delivery.conftest import APP_HEADER, StartAppWorker
from delivery.support import assert_drained
from helpers.redis_servers import RedisServerFactory
from helpers.workers import Ledger, wait_until
from runtime.support import payload, push_raw

pytestmark = pytest.mark.slow

WORK = APP_HEADER + '''

@app.job(name="Work")
def work(tag):
    record(tag, "Work", "ran")
'''

MARGIN = 200_000
"""Bytes by which the test puts Redis over its ``maxmemory``: more than the 200 jobs and
every key a worker's failing writes could let expire, so Redis stays full throughout."""


def make_full(client: redis.Redis) -> None:
    """Set ``maxmemory`` below what Redis uses now (``noeviction``): every write that may
    grow memory is refused from now on."""
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", max(used - MARGIN, 1))


def test_a_full_redis_keeps_the_queued_jobs_moving(
    redis_server_factory: RedisServerFactory, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker,
) -> None:
    server = redis_server_factory(appendonly=False)
    client = redis.Redis.from_url(server.url)
    client.set(f"{keys.prefix}:ballast", b"x" * 2 * MARGIN)  # room to be over the limit by
    client.sadd(keys.paused_queues, "default")  # nothing moves until Redis is full
    tags = [f"job-{n}" for n in range(200)]
    push_raw(client, keys, "default", b"not a job",  # buried in dead, full or not
             *(payload("Work", [tag], "default", new_jid()) for tag in tags))
    worker = app_worker(WORK, server.url, "-c", "4")
    make_full(client)
    with pytest.raises(rex.OutOfMemoryError):
        client.set(f"{keys.prefix}:one-more", "x")

    client.srem(keys.paused_queues, "default")  # a removal: Redis takes it when full
    wait_until(lambda: ledger.count("ran") == len(tags), 30, lambda: worker.output()[-3000:])
    # The queue is empty, Redis still full: the idle worker must wait quietly.
    full = "the broker is full (Redis: maxmemory reached, noeviction)"
    wait_until(lambda: full in worker.output(), 20, lambda: worker.output()[-3000:])
    with pytest.raises(rex.OutOfMemoryError):
        client.set(f"{keys.prefix}:one-more", "x")

    client.config_set("maxmemory", 0)  # room again
    push_raw(client, keys, "default", payload("Work", ["with-room"], "default", new_jid()))
    wait_until(lambda: ledger.count("ran") == len(tags) + 1, 20,
               lambda: worker.output()[-3000:])
    # Only a blocking claim that Redis accepted tells the fetcher the room is back, and it
    # returns after its timeout: the line comes that long after the last job ran.
    room = "the broker has room again: fetches block"
    wait_until(lambda: room in worker.output(), 20, lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    assert sorted(event.jid for event in ledger.events("ran")) == sorted([*tags, "with-room"])
    log = worker.output()
    assert "fetch: " not in log  # not one fetch failed
    assert log.count("the broker is full") == 1
    assert "unparseable job on queue default moved to dead" in log
    assert "filing jid=" not in log  # the burial was filed at once, Redis full
    assert_drained(client, keys, dead=1)
    client.close()
