"""Seeing and clearing locks: where each owner job is, orphans, the hourly report."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis

import cogworker
from cogworker.core.payload import dumps
from cogworker.plugins.unique_admin import (
    LockInfo,
    clear_lock,
    clear_orphaned,
    list_locks,
    report_orphaned_locks,
)
from cogworker.plugins.unique_state import OrphanReportClock
from cogworker.redis.keys import KeySchema
from helpers.workers import wait_until
from unique.unique_helpers import FakeWorker, lock_keys, owner

IDENTITY = "host:42:0123456789ab"


def payload(jid: str, name: str) -> str:
    return dumps({"class": name, "args": [jid], "queue": "default", "jid": jid,
                  "unique": "until_executed"})


def hold(client: redis.Redis, keys: KeySchema, digest: str, jid: str, ttl: int = 600) -> str:
    key = keys.unique(digest)
    client.set(key, jid, ex=ttl)
    return key


@pytest.fixture
def everywhere(redis_client: redis.Redis, keys: KeySchema) -> dict[str, str]:
    """One lock per place its owner can be; returns owner jid → expected ``where``."""
    places = {"j-queued": "queued", "j-sched": "scheduled", "j-retry": "retrying",
              "j-inprog": "running", "j-worker": "running", "j-dead": "dead",
              "j-ghost": "nowhere"}
    for jid in places:
        hold(redis_client, keys, f"d-{jid}", jid)
    redis_client.sadd(keys.queues, "default", "low")
    redis_client.lpush(keys.queue("low"), *(payload(f"filler-{n}", "Other") for n in range(2500)))
    redis_client.lpush(keys.queue("default"), payload("j-queued", "Sync"))
    redis_client.zadd(keys.schedule, {payload("j-sched", "Sync"): time.time() + 60})
    redis_client.zadd(keys.retry, {payload("j-retry", "Mail"): time.time() + 60})
    redis_client.zadd(keys.dead, {payload("j-dead", "Mail"): time.time()})
    redis_client.sadd(keys.inprogress_identities, IDENTITY)
    redis_client.lpush(keys.inprogress(IDENTITY), payload("j-inprog", "Sync"))
    redis_client.sadd(keys.processes, IDENTITY)
    entry = {"queue": "default", "payload": json.loads(payload("j-worker", "Mail")), "run_at": 1}
    redis_client.hset(keys.workers(IDENTITY), "tid1", dumps(entry))
    return places


def by_owner(locks: list[LockInfo]) -> dict[str, LockInfo]:
    return {lock.owner: lock for lock in locks}


def test_list_locks_tells_where_each_owner_job_is(
    app: cogworker.App, everywhere: dict[str, str]
) -> None:
    locks = by_owner(list_locks(app))
    assert {jid: lock.where for jid, lock in locks.items()} == everywhere
    assert locks["j-queued"].job == "Sync"
    assert locks["j-worker"].job == "Mail"
    assert locks["j-ghost"].job == "?"
    assert {jid for jid, lock in locks.items() if lock.orphaned} == {"j-dead", "j-ghost"}
    assert all(lock.kind == "push" and lock.ttl is not None and 590 < lock.ttl <= 600
               for lock in locks.values())


def test_list_locks_filters_by_job_name(
    app: cogworker.App, everywhere: dict[str, str]
) -> None:
    assert sorted(lock.owner for lock in list_locks(app, job="Mail")) == [
        "j-dead", "j-retry", "j-worker"]
    assert list_locks(app, job="Nope") == []


def test_clear_orphaned_takes_only_locks_nothing_will_release(
    app: cogworker.App, everywhere: dict[str, str], redis_client: redis.Redis,
    keys: KeySchema,
) -> None:
    window = hold(redis_client, keys, "d-window:for", "j-finished")
    assert clear_orphaned(app) == 2
    remaining = {lock.owner for lock in list_locks(app)}
    assert remaining == set(everywhere) - {"j-dead", "j-ghost"} | {"j-finished"}
    assert owner(redis_client, window) == "j-finished"  # a window lock outlives its job


def test_clear_lock_takes_a_full_key_or_its_digest_and_nothing_else(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    key = hold(redis_client, keys, "abc", "j1")
    hold(redis_client, keys, "abc:run", "j2")
    redis_client.rpush(keys.queue("default"), "x")
    assert clear_lock(app, key) is True
    assert clear_lock(app, "abc:run") is True
    assert clear_lock(app, "abc") is False
    assert clear_lock(app, keys.queue("default")) is False
    assert redis_client.llen(keys.queue("default")) == 1
    assert lock_keys(redis_client, keys) == []


def test_locks_of_real_pushes_are_listed_with_their_job(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="until_executed", name="Sync")
    def sync(account: int) -> None: ...

    @app.job(unique_for=30, name="Digest")
    def digest(day: str) -> None: ...

    jid = sync.perform_async(1)
    later = digest.perform_in(600, "mon")
    locks = list_locks(app)
    assert {(lock.owner, lock.kind, lock.where, lock.job) for lock in locks} == {
        (jid, "push", "queued", "Sync"), (later, "window", "scheduled", "Digest")}
    assert [lock.key for lock in locks] == sorted(lock.key for lock in locks)
    assert not any(lock.orphaned for lock in locks)


def test_the_orphan_report_names_orphaned_locks(
    app: cogworker.App, everywhere: dict[str, str], caplog: pytest.LogCaptureFixture,
    keys: KeySchema,
) -> None:
    orphans = report_orphaned_locks(app)
    assert {lock.owner for lock in orphans} == {"j-dead", "j-ghost"}
    [record] = [r for r in caplog.records if "will never release them" in r.getMessage()]
    assert record.levelname == "WARNING"
    assert keys.unique("d-j-ghost") in record.getMessage()
    assert "cogworker locks clear --orphaned" in record.getMessage()


def test_heartbeats_run_the_orphan_report_in_the_background(
    redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema,
    caplog: pytest.LogCaptureFixture,
) -> None:
    options: dict[str, Any] = {"unique": {"orphan_report_interval": 0.01}}
    app = cogworker.App(redis_url=redis_url, namespace=namespace, plugin_options=options)
    try:
        hold(redis_client, keys, "lost", "j-ghost")
        worker = FakeWorker(app)

        def reported() -> bool:
            app.hooks.heartbeat(worker)
            return "will never release them" in caplog.text

        wait_until(reported, 10, "no orphan report after heartbeats")
    finally:
        app.close()


def test_the_report_runs_at_most_once_per_interval() -> None:
    clock = OrphanReportClock(interval=3600, next_due=3600)
    turns = []
    for now in (0.0, 1800.0, 3600.0, 3601.0, 5000.0, 7200.0):
        turns.append(clock.take_turn(now))
        clock.running.clear()
    assert turns == [False, False, True, False, False, True]
    assert OrphanReportClock(interval=0).take_turn(1e9) is False


def test_the_first_report_comes_within_one_interval() -> None:
    clock = OrphanReportClock(interval=3600)
    clock.take_turn(100.0)
    assert clock.next_due is not None
    assert 100.0 <= clock.next_due <= 100.0 + 3600


def test_a_report_still_running_is_not_started_twice() -> None:
    clock = OrphanReportClock(interval=1, next_due=0)
    assert clock.take_turn(5) is True
    assert clock.take_turn(50) is False
    clock.running.clear()
    assert clock.take_turn(50) is True
