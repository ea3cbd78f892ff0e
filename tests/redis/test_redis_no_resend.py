"""A command whose reply is lost is never written again: it may have run (redis-py >= 6
would re-send it on a new connection by default, storing a pushed batch twice)."""

from __future__ import annotations

import pytest
import redis

from cogworker.core.errors import BrokerUnavailableError
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from helpers.cutting_proxy import CuttingProxy

JOB = '{"class":"Work","args":[],"queue":"q","jid":"0123456789abcdef01234567"}'


def proxied_broker(proxy: CuttingProxy, keys: KeySchema) -> RedisBroker:
    return RedisBroker(make_client(proxy.url, max_connections=2), keys)


@pytest.mark.parametrize(("marker", "immediate"), [
    (b"EXEC", [("q", JOB), ("q", JOB), ("other", JOB)]),  # a bulk push: one MULTI
    (b"EVALSHA", [("q", JOB)]),  # a queue's first single push: push.lua
])
def test_a_push_whose_reply_is_lost_raises_and_is_stored_once(
    redis_server: RedisServer, redis_client: redis.Redis, keys: KeySchema, marker: bytes,
    immediate: list[tuple[str, str]],
) -> None:
    assert redis_server.port is not None
    RedisBroker(redis_client, keys).queues.store([("warm-up", JOB)], [])  # push.lua is loaded
    with CuttingProxy(redis_server.port, marker) as proxy:
        broker = proxied_broker(proxy, keys)
        with pytest.raises(BrokerUnavailableError):
            broker.queues.store(immediate, [])
        assert proxy.cuts == 1
        broker.queues.store([("q", JOB)], [])  # the next call works, on a new connection
        broker.close()

    expected = sum(queue == "q" for queue, _ in immediate) + 1
    assert redis_client.llen(keys.queue("q")) == expected
