"""cogworker: the no-op job and the client (``app.push_bulk`` for bulk)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import cogworker
from benchmarks.counter import record
from benchmarks.systems import REDIS_URL_ENV, SyncClient

app = cogworker.App(redis_url=os.environ.get(REDIS_URL_ENV), namespace="bench")


@app.job
def noop(argument: float) -> None:
    record(argument)


class Client(SyncClient):
    def push(self, argument: float) -> None:
        noop.perform_async(argument)

    def push_bulk(self, arguments: Sequence[int]) -> None:
        app.push_bulk(noop, [[argument] for argument in arguments])

    def close(self) -> None:
        app.close()


def make_client() -> Client:
    return Client()
