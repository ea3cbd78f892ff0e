"""huey: the no-op task and the client (no bulk enqueue in huey)."""

from __future__ import annotations

import os

from huey import RedisHuey  # type: ignore[import-untyped]

from benchmarks.counter import record
from benchmarks.systems import REDIS_URL_ENV, SyncClient

huey = RedisHuey("bench", url=os.environ.get(REDIS_URL_ENV))


@huey.task()  # type: ignore[untyped-decorator]
def noop(argument: float) -> None:
    record(argument)


class Client(SyncClient):
    def push(self, argument: float) -> None:
        noop(argument)

    def close(self) -> None:
        huey.storage.conn.close()


def make_client() -> Client:
    return Client()
