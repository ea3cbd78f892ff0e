"""Celery: the no-op task and the client (no bulk enqueue in Celery)."""

from __future__ import annotations

import os

from celery import Celery  # type: ignore[import-untyped]

from benchmarks.counter import record
from benchmarks.systems import REDIS_URL_ENV, SyncClient

app = Celery("bench", broker=os.environ.get(REDIS_URL_ENV))
app.conf.broker_connection_retry_on_startup = True  # silences a start-up warning only


@app.task(name="bench.noop")  # type: ignore[untyped-decorator]
def noop(argument: float) -> None:
    record(argument)


class Client(SyncClient):
    def push(self, argument: float) -> None:
        noop.delay(argument)

    def close(self) -> None:
        app.close()


def make_client() -> Client:
    return Client()
