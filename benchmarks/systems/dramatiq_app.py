"""Dramatiq: the no-op actor and the client (no bulk enqueue in Dramatiq)."""

from __future__ import annotations

import os

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from benchmarks.counter import record
from benchmarks.systems import REDIS_URL_ENV, SyncClient

broker = RedisBroker(url=os.environ.get(REDIS_URL_ENV))  # type: ignore[no-untyped-call]
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name="bench")
def noop(argument: float) -> None:
    record(argument)


class Client(SyncClient):
    def push(self, argument: float) -> None:
        noop.send(argument)

    def close(self) -> None:
        broker.close()


def make_client() -> Client:
    return Client()
