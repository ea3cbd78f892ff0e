"""Owner-checked locks: a stale owner can never extend or release a newer owner's lock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from cogworker.core.errors import BrokerError
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.locks import RedisLocks


@pytest.fixture
def locks(redis_url: str, keys: KeySchema, redis_client: redis.Redis) -> Iterator[RedisLocks]:
    broker = RedisBroker(make_client(redis_url, max_connections=2), keys)
    yield broker.locks
    broker.close()


def test_acquire_is_exclusive_and_sets_a_whole_second_ttl(
    locks: RedisLocks, keys: KeySchema, redis_client: redis.Redis
) -> None:
    key = keys.unique("digest")
    assert locks.acquire(key, "jid-a", 9.2) is True
    assert locks.acquire(key, "jid-b", 9.2) is False
    assert locks.owner(key) == "jid-a"
    assert 9 <= redis_client.ttl(key) <= 10


def test_a_sub_second_ttl_still_holds_the_lock(
    locks: RedisLocks, keys: KeySchema, redis_client: redis.Redis
) -> None:
    key = keys.unique("short")
    assert locks.acquire(key, "jid-a", 0.01) is True
    assert redis_client.ttl(key) == 1


def test_only_the_owner_extends(
    locks: RedisLocks, keys: KeySchema, redis_client: redis.Redis
) -> None:
    key = keys.unique("digest")
    locks.acquire(key, "jid-a", 10)
    assert locks.extend(key, "jid-b", 1000) is False
    assert redis_client.ttl(key) <= 10
    assert locks.extend(key, "jid-a", 999.5) is True
    assert 990 < redis_client.ttl(key) <= 1000


def test_extend_of_a_missing_lock_does_not_create_it(
    locks: RedisLocks, keys: KeySchema, redis_client: redis.Redis
) -> None:
    assert locks.extend(keys.unique("gone"), "jid-a", 10) is False
    assert redis_client.exists(keys.unique("gone")) == 0


def test_a_stale_owner_cannot_release_a_newer_owners_lock(
    locks: RedisLocks, keys: KeySchema, redis_client: redis.Redis
) -> None:
    key = keys.periodic_running("pjid")
    locks.acquire(key, "old-run", 10)
    redis_client.delete(key)  # the old run's lock expired...
    assert locks.acquire(key, "new-run", 10) is True  # ...and a newer run took it
    assert locks.release(key, "old-run") is False
    assert locks.owner(key) == "new-run"
    assert locks.release(key, "new-run") is True
    assert locks.owner(key) is None


def test_lock_key_of_the_wrong_type_is_a_broker_error(
    locks: RedisLocks, keys: KeySchema, redis_client: redis.Redis
) -> None:
    key = keys.unique("listy")
    redis_client.lpush(key, "x")
    with pytest.raises(BrokerError) as caught:
        locks.release(key, "jid")
    assert isinstance(caught.value.__cause__, redis.ResponseError)
