"""A queue key of the wrong Redis type is quarantined the first time a fetch meets it (the
spec's KeyGuard, original-behaviour.md §11.6): one error line, the odd value kept aside for
30 days, and the healthy queues served at full speed, without an error a second."""

from __future__ import annotations

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from delivery.conftest import APP_HEADER, StartAppWorker
from helpers.workers import Ledger, wait_until
from runtime.support import payload, push_raw

pytestmark = pytest.mark.slow

WORK = APP_HEADER + '''

@app.job(name="Work")
def work(tag):
    record(tag, "Work", "ran")
'''


def quarantined(client: redis.Redis, keys: KeySchema, key: str) -> list[str]:
    prefix = keys.quarantine(key, 0, "x").removesuffix("0:x")
    return [as_text(name) for name in client.scan_iter(match=prefix + "*")]


@pytest.mark.parametrize("queues", [("bad", "good"), ("bad",)], ids=["two-queues", "one-queue"])
@pytest.mark.parametrize("fetch", ["reliable", "basic"])
def test_a_queue_key_of_the_wrong_type_is_quarantined_once_and_the_queues_run(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, fetch: str, queues: tuple[str, ...],
) -> None:
    bad_key = keys.queue("bad")
    redis_client.set(bad_key, "not a list")
    redis_client.sadd(keys.queues, "bad")
    tags = [f"job-{n}" for n in range(20)] if "good" in queues else []
    if tags:
        push_raw(redis_client, keys, "good",
                 *(payload("Work", [tag], "good", new_jid()) for tag in tags))

    worker = app_worker(WORK, redis_url, "-c", "2", "--plugin", fetch,
                        *(arg for queue in queues for arg in ("-q", queue)))
    wait_until(lambda: ledger.count("ran") == len(tags) and " held a string" in worker.output(),
               20, lambda: worker.output()[-3000:])
    push_raw(redis_client, keys, "bad", payload("Work", ["on-the-fresh-key"], "bad", new_jid()))
    wait_until(lambda: ledger.count("ran") == len(tags) + 1, 20,
               lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    assert sorted(event.jid for event in ledger.events("ran")) == sorted(
        [*tags, "on-the-fresh-key"])
    [copy] = quarantined(redis_client, keys, bad_key)
    assert redis_client.get(copy) == b"not a list"
    assert 29 * 86_400 < int(redis_client.ttl(copy)) <= 30 * 86_400
    log = worker.output()
    assert log.count(f"{bad_key} held a string, not a list: moved to {copy}") == 1
    assert "WRONGTYPE" not in log  # no fetch failed, so no back-off either
