"""Fixtures for the fetchers and orphan recovery: a RedisBroker, fetchers, job factories."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import cogworker
from cogworker.core.broker import Relock
from cogworker.core.payload import dumps, new_jid
from cogworker.fetchers.basic import BasicFetcher
from cogworker.fetchers.recovery import hook_relock
from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema
from fetchers.fetch_helpers import IDENTITY, MakeJob, Push


@pytest.fixture
def broker(redis_client: redis.Redis, keys: KeySchema) -> RedisBroker:
    return RedisBroker(redis_client, keys)


@pytest.fixture
def relock(redis_url: str, namespace: str) -> Relock:
    """The relock the built-in strategies requeue with: the default plugins' answer to
    ``cogworker_requeue_lock`` (periodic-locks re-takes an until_executed run's lock)."""
    return hook_relock(cogworker.App(redis_url=redis_url, namespace=namespace))


@pytest.fixture
def make_job() -> MakeJob:
    """``make_job(queue="default", **fields)`` -> a raw payload with a fresh jid."""

    def make(queue: str = "default", **fields: Any) -> str:
        job: dict[str, Any] = {"class": "Work", "args": [], "queue": queue, "jid": new_jid()}
        job.update(fields)
        return dumps(job)

    return make


@pytest.fixture
def push(broker: RedisBroker) -> Push:
    """``push(raw, ...)`` stores raws on their queues the way clients do (LPUSH + wake-up)."""

    def store(*raws: str) -> None:
        broker.queues.store([(json.loads(raw)["queue"], raw) for raw in raws], [])

    return store


@pytest.fixture
def reliable(broker: RedisBroker, relock: Relock) -> Iterator[ReliableFetcher]:
    fetcher = ReliableFetcher(broker, IDENTITY, relock=relock, idle_max_interval=0.2)
    yield fetcher
    fetcher.close()


@pytest.fixture
def basic(broker: RedisBroker, relock: Relock) -> Iterator[BasicFetcher]:
    fetcher = BasicFetcher(broker, IDENTITY, relock=relock)
    yield fetcher
    fetcher.close()
