"""The contract suite's one broker factory: every test here runs on every broker.

A test asks for ``broker`` (a fresh broker, default options) or ``make_broker`` (a factory
taking the broker options the contract names: ``dead_max_jobs``, ``dead_timeout``), and
``store_time`` to let the store's clock pass. Each broker kind is one line of
:data:`BROKERS`; a third broker is one more line.

* ``redis``: a :class:`~cogworker.redis.broker.RedisBroker` on the session's private
  redis-server, in a namespace of its own (deleted afterwards);
* ``memory``: a :class:`~cogworker.testing.memory_broker.MemoryBroker` whose clock is real
  time plus whatever the test let pass, so TTLs expire without waiting.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pytest

from cogworker.core.broker import Broker
from cogworker.testing.memory_broker import MemoryBroker


class StoreTime(Protocol):
    """Let ``seconds`` pass on the store's clock (for TTLs and liveness)."""

    def __call__(self, seconds: float) -> None: ...


class MakeBroker(Protocol):
    def __call__(self, **options: Any) -> Broker: ...


class ShiftedClock:
    """Real time plus the seconds a test let pass."""

    def __init__(self) -> None:
        self.shift = 0.0

    def __call__(self) -> float:
        return time.time() + self.shift

    def let_pass(self, seconds: float) -> None:
        self.shift += seconds


def redis_broker(request: pytest.FixtureRequest, clock: ShiftedClock,
                 options: dict[str, Any]) -> Broker:
    from cogworker.redis.broker import RedisBroker
    from cogworker.redis.keys import KeySchema

    client = request.getfixturevalue("redis_client")
    broker: Broker = RedisBroker(client, KeySchema(request.getfixturevalue("namespace")),
                                 **options)
    return broker


def memory_broker(request: pytest.FixtureRequest, clock: ShiftedClock,
                  options: dict[str, Any]) -> Broker:
    return MemoryBroker(clock, **options)


Factory = Callable[[pytest.FixtureRequest, ShiftedClock, dict[str, Any]], Broker]

BROKERS: dict[str, Factory] = {
    "redis": redis_broker,
    "memory": memory_broker,
}
"""Every broker implementation the suite proves, by kind (its ``Broker.name``)."""

TIME_PASSES_BY_ITSELF = {"redis"}
"""Brokers whose clock the test cannot move: the store's time passes by sleeping."""


@pytest.fixture(params=sorted(BROKERS))
def broker_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def shifted_clock() -> ShiftedClock:
    return ShiftedClock()


@pytest.fixture
def make_broker(request: pytest.FixtureRequest, broker_kind: str,
                shifted_clock: ShiftedClock) -> Iterator[MakeBroker]:
    made: list[Broker] = []

    def make(**options: Any) -> Broker:
        made.append(BROKERS[broker_kind](request, shifted_clock, options))
        return made[-1]

    yield make
    for broker in made:
        broker.close()


@pytest.fixture
def broker(make_broker: MakeBroker) -> Broker:
    return make_broker()


@pytest.fixture
def store_time(broker_kind: str, shifted_clock: ShiftedClock) -> StoreTime:
    def let_pass(seconds: float) -> None:
        if broker_kind in TIME_PASSES_BY_ITSELF:
            time.sleep(seconds)
        else:
            shifted_clock.let_pass(seconds)

    return let_pass


@pytest.fixture
def holder() -> str:
    """A process identity no other test uses."""
    return f"host:{uuid.uuid4().hex[:6]}:{uuid.uuid4().hex[:12]}"
