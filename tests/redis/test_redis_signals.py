"""Pub/sub: remote signals and wake-ups on dedicated connections."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from helpers.redis_servers import RedisServerFactory

IDENTITY = "host:1:0123456789ab"


@pytest.fixture
def broker(redis_url: str, keys: KeySchema, redis_client: redis.Redis) -> Iterator[RedisBroker]:
    broker = RedisBroker(make_client(redis_url, max_connections=1), keys)
    yield broker
    broker.close()


def test_signal_round_trip(broker: RedisBroker) -> None:
    with broker.processes.subscribe_signals(IDENTITY) as subscription:
        assert broker.processes.signal(IDENTITY, "quiet") == 1
        assert broker.processes.signal(IDENTITY, "stop") == 1
        assert subscription.get(5.0) == "quiet"
        assert subscription.get(5.0) == "stop"
        assert subscription.get(0.05) is None


def test_signals_are_per_identity(broker: RedisBroker) -> None:
    with broker.processes.subscribe_signals(IDENTITY) as subscription:
        assert broker.processes.signal("someone:else:1", "stop") == 0
        assert subscription.get(0.05) is None


def test_closing_the_subscription_ends_it(broker: RedisBroker) -> None:
    with broker.processes.subscribe_signals(IDENTITY) as subscription:
        pass
    subscription.close()  # idempotent
    assert broker.processes.signal(IDENTITY, "quiet") == 0


def test_a_subscription_does_not_take_a_pooled_connection(broker: RedisBroker) -> None:
    # The pool holds one connection: subscriptions must not need it.
    with (broker.processes.subscribe_signals(IDENTITY) as signals,
          broker.queues.subscribe_wakeups() as wakeups):
        broker.queues.store([("default", '{"queue":"default"}')], [])
        assert broker.processes.signal(IDENTITY, "resume") == 1
        assert wakeups.get(5.0) == "default"
        assert signals.get(5.0) == "resume"


def test_a_killed_subscription_connection_subscribes_again(
    redis_server_factory: RedisServerFactory, keys: KeySchema
) -> None:
    server = redis_server_factory(appendonly=False)  # private: CLIENT KILL hits only us
    broker = RedisBroker(make_client(server.url, max_connections=2), keys)
    admin = redis.Redis.from_url(server.url)
    channel = keys.signal(IDENTITY).encode()
    with broker.processes.subscribe_signals(IDENTITY) as subscription:
        assert admin.client_kill_filter(_type="pubsub") == 1
        received = None
        for _ in range(100):  # bounded: re-subscription happens on the next read
            subscription.get(0.05)
            if admin.pubsub_numsub(channel)[0][1] and broker.processes.signal(IDENTITY, "quiet"):
                received = subscription.get(5.0)
                break
        assert received == "quiet"
    broker.close()
    admin.close()
