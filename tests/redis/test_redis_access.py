"""``RedisAccess``: the documented way a Redis-specific plugin reaches the Redis broker."""

from __future__ import annotations

import redis

from cogworker.redis import RedisAccess, translate_errors
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema
from cogworker.testing.memory_broker import MemoryBroker


def redis_view(broker: RedisBroker) -> RedisAccess:
    return broker  # mypy checks it: the Redis broker satisfies the Protocol


def test_a_redis_plugin_reaches_the_client_keys_and_scripts(redis_client: redis.Redis,
                                                            keys: KeySchema) -> None:
    broker = RedisBroker(redis_client, keys)
    access = redis_view(broker)
    lock = access.keys.lock("acme:report")
    redis_client.set(lock, "jid-1")

    assert isinstance(broker, RedisAccess)  # how a plugin checks, at run time
    with translate_errors():
        released = access.scripts.run("cogworker.redis", "delete_if_owned", [lock], ["jid-1"])
        assert access.client.exists(lock) == 0
    assert released == 1


def test_another_broker_is_no_redis_access() -> None:
    assert not isinstance(MemoryBroker(), RedisAccess)
    assert not isinstance(object(), RedisAccess)
