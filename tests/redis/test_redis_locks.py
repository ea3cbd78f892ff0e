"""Owner-checked locks: a stale owner can never extend or release a newer owner's lock.

Lock names become keys through ``KeySchema.lock``: ``unique:<digest>`` is the original's
``<ns>:unique:<digest>``, ``periodic:running:<pjid>`` the original's cron key.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from cogworker.core.errors import BrokerError
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.lock_store import RedisLockStore


@pytest.fixture
def locks(redis_url: str, keys: KeySchema,
          redis_client: redis.Redis) -> Iterator[RedisLockStore]:
    broker = RedisBroker(make_client(redis_url, max_connections=2), keys)
    yield broker.locks
    broker.close()


def test_acquire_is_exclusive_and_sets_a_whole_second_ttl(
    locks: RedisLockStore, keys: KeySchema, redis_client: redis.Redis
) -> None:
    assert locks.acquire("unique:digest", "jid-a", 9.2) is True
    assert locks.acquire("unique:digest", "jid-b", 9.2) is False
    assert locks.owner("unique:digest") == "jid-a"
    assert redis_client.get(keys.unique("digest")) == b"jid-a"  # the original's key
    assert 9 <= redis_client.ttl(keys.unique("digest")) <= 10


def test_a_sub_second_ttl_still_holds_the_lock(
    locks: RedisLockStore, keys: KeySchema, redis_client: redis.Redis
) -> None:
    assert locks.acquire("unique:short", "jid-a", 0.01) is True
    assert redis_client.ttl(keys.unique("short")) == 1


def test_only_the_owner_extends(
    locks: RedisLockStore, keys: KeySchema, redis_client: redis.Redis
) -> None:
    key = keys.unique("digest")
    locks.acquire("unique:digest", "jid-a", 10)
    assert locks.extend("unique:digest", "jid-b", 1000) is False
    assert redis_client.ttl(key) <= 10
    assert locks.extend("unique:digest", "jid-a", 999.5) is True
    assert 990 < redis_client.ttl(key) <= 1000


def test_extend_of_a_missing_lock_does_not_create_it(
    locks: RedisLockStore, keys: KeySchema, redis_client: redis.Redis
) -> None:
    assert locks.extend("unique:gone", "jid-a", 10) is False
    assert redis_client.exists(keys.unique("gone")) == 0


def test_retake_takes_a_free_lock_refreshes_its_own_and_leaves_anothers(
    locks: RedisLockStore, keys: KeySchema, redis_client: redis.Redis
) -> None:
    assert locks.retake("periodic:running:pjid", "run-1", 30) is True
    key = keys.periodic_running("pjid")
    assert redis_client.get(key) == b"run-1" and 0 < redis_client.ttl(key) <= 30
    assert locks.retake("periodic:running:pjid", "run-1", 300) is True
    assert 30 < redis_client.ttl(key) <= 300
    assert locks.retake("periodic:running:pjid", "run-2", 900) is False
    assert redis_client.get(key) == b"run-1" and redis_client.ttl(key) <= 300


def test_a_stale_owner_cannot_release_a_newer_owners_lock(
    locks: RedisLockStore, keys: KeySchema, redis_client: redis.Redis
) -> None:
    name = "periodic:running:pjid"
    locks.acquire(name, "old-run", 10)
    redis_client.delete(keys.periodic_running("pjid"))  # the old run's lock expired...
    assert locks.acquire(name, "new-run", 10) is True  # ...and a newer run took it
    assert locks.release(name, "old-run") is False
    assert locks.owner(name) == "new-run"
    assert locks.release(name, "new-run") is True
    assert locks.owner(name) is None


def test_lock_key_of_the_wrong_type_is_a_broker_error(
    locks: RedisLockStore, keys: KeySchema, redis_client: redis.Redis
) -> None:
    redis_client.lpush(keys.unique("listy"), "x")
    with pytest.raises(BrokerError) as caught:
        locks.release("unique:listy", "jid")
    assert isinstance(caught.value.__cause__, redis.ResponseError)
    assert locks.get(["unique:listy"]) == {}  # not a lock: left out of reads


def test_an_empty_name_is_refused(locks: RedisLockStore) -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        locks.acquire("", "jid", 10)


def test_get_reads_several_locks_at_once(locks: RedisLockStore) -> None:
    locks.acquire("unique:a", "jid-a", 60)
    locks.acquire("periodic:running:p", "jid-p", 600)
    found = locks.get(["unique:a", "unique:free", "periodic:running:p"])
    assert {name: lock.owner for name, lock in found.items()} == {
        "unique:a": "jid-a", "periodic:running:p": "jid-p"}
    assert found["unique:a"].ttl is not None and 0 < found["unique:a"].ttl <= 60


def test_a_scan_returns_every_lock_once_a_step_at_most_limit(
    locks: RedisLockStore, redis_client: redis.Redis, keys: KeySchema
) -> None:
    names = {f"unique:bulk{index:03d}" for index in range(130)}
    for name in names:
        locks.acquire(name, "jid", 600)
    locks.acquire("periodic:running:other", "jid", 600)  # another prefix: never listed
    redis_client.lpush(keys.unique("not-a-lock"), "x")  # a value that is no lock: skipped
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(200):
        page = locks.scan("unique:", cursor=cursor, limit=7)
        assert len(page.locks) <= 7
        assert [lock.name for lock in page.locks] == sorted(lock.name for lock in page.locks)
        seen += [lock.name for lock in page.locks]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert set(seen) == names


def test_a_scan_filters_by_the_text_after_the_prefix(locks: RedisLockStore) -> None:
    locks.acquire("unique:C0FFEE12:run", "jid-1", 60)
    locks.acquire("unique:deadbeef", "jid-2", 60)
    found: list[str] = []
    cursor: str | None = None
    while True:
        page = locks.scan("unique:", contains="c0ffee", cursor=cursor)
        found += [lock.name for lock in page.locks]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert found == ["unique:C0FFEE12:run"]
    with pytest.raises(ValueError, match="not a lock scan cursor"):
        locks.scan("unique:", cursor="nonsense")


def test_delete_removes_a_lock_whoever_holds_it(locks: RedisLockStore) -> None:
    locks.acquire("unique:x", "jid", 60)
    assert locks.delete("unique:x") is True
    assert locks.delete("unique:x") is False
