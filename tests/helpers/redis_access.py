"""The Redis under an app, for tests that look at the stored keys themselves."""

from __future__ import annotations

import redis

import cogworker
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema


def redis_broker(app: cogworker.App) -> RedisBroker:
    """``app.broker``, which these tests build from a Redis URL: a ``RedisBroker``."""
    broker = app.broker
    assert isinstance(broker, RedisBroker), f"expected the Redis broker, got {broker!r}"
    return broker


def keys_of(app: cogworker.App) -> KeySchema:
    """The key schema of ``app``'s Redis broker."""
    return redis_broker(app).keys


def client_of(app: cogworker.App) -> redis.Redis:
    """The redis-py client of ``app``'s Redis broker."""
    return redis_broker(app).client
