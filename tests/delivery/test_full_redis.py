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

FULL = ("--maxmemory", "4mb", "--maxmemory-policy", "noeviction")


def fill(client: redis.Redis, keys: KeySchema, start: int) -> int:
    """Write values until Redis refuses even a small one for lack of memory (the query
    buffer of a big write counts too, so small writes finish the job); returns the next
    index."""
    index = start
    for size, batch in ((1000, 100), (50, 1)):
        while True:
            pipe = client.pipeline(transaction=False)
            for offset in range(batch):
                pipe.set(f"{keys.prefix}:filler:{index + offset}", b"x" * size)
            replies = pipe.execute(raise_on_error=False)
            index += len(replies)
            if any(isinstance(reply, rex.OutOfMemoryError) for reply in replies):
                break
    return index


def make_full(client: redis.Redis, keys: KeySchema, start: int) -> int:
    """Fill Redis until a one-byte write is refused (the memory other clients use moves a
    little); returns the next filler index."""
    index = start
    while True:
        index = fill(client, keys, index)
        try:
            client.set(f"{keys.prefix}:filler:{index}", "x")
        except rex.OutOfMemoryError:
            return index
        index += 1


def test_a_full_redis_keeps_the_queued_jobs_moving(
    redis_server_factory: RedisServerFactory, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker,
) -> None:
    server = redis_server_factory(appendonly=False, extra_args=FULL)
    client = redis.Redis.from_url(server.url)
    client.sadd(keys.paused_queues, "default")  # nothing moves until Redis is full
    tags = [f"job-{n}" for n in range(200)]
    push_raw(client, keys, "default", *(payload("Work", [tag], "default", new_jid())
                                        for tag in tags))
    worker = app_worker(WORK, server.url, "-c", "4")
    filled = make_full(client, keys, 0)

    client.srem(keys.paused_queues, "default")  # a removal: Redis takes it when full
    wait_until(lambda: ledger.count("ran") == len(tags), 30, lambda: worker.output()[-3000:])

    # Full again while the worker waits on its empty queue: it must wait quietly.
    make_full(client, keys, filled)
    wait_until(lambda: "Redis is full (maxmemory reached, noeviction)" in worker.output(), 20,
               lambda: worker.output()[-3000:])
    for key in client.scan_iter(match=f"{keys.prefix}:filler:*", count=1000):
        client.delete(key)
    push_raw(client, keys, "default", payload("Work", ["with-room"], "default", new_jid()))
    wait_until(lambda: ledger.count("ran") == len(tags) + 1, 20,
               lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    assert sorted(event.jid for event in ledger.events("ran")) == sorted([*tags, "with-room"])
    log = worker.output()
    assert "fetch: " not in log  # not one fetch failed
    assert log.count("Redis is full") == 1
    assert "Redis has room again" in log
    assert_drained(client, keys)
    client.close()
