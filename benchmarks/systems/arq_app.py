"""arq: the no-op coroutine, the client (no bulk enqueue in arq) and the worker launcher.

``python -m benchmarks.systems.arq_app`` runs the worker like the ``arq`` command does, with
the log level at WARNING (the command has no flag for that).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.worker import run_worker

from benchmarks.counter import record
from benchmarks.systems import REDIS_URL_ENV

REDIS_SETTINGS = RedisSettings.from_dsn(os.environ.get(REDIS_URL_ENV) or "redis://127.0.0.1")


async def noop(ctx: dict[str, Any], argument: float) -> None:
    record(argument)


class WorkerSettings:
    functions: ClassVar[list[Any]] = [noop]
    redis_settings = REDIS_SETTINGS


class Client:
    """Drives arq from one event loop, so no loop is entered per job."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pool: ArqRedis = self.loop.run_until_complete(create_pool(REDIS_SETTINGS))

    def push_each(self, arguments: Sequence[float]) -> None:
        self.loop.run_until_complete(self._push_each(arguments))

    async def _push_each(self, arguments: Sequence[float]) -> None:
        for argument in arguments:
            await self.pool.enqueue_job("noop", argument)

    def push_bulk(self, arguments: Sequence[int]) -> None:
        raise NotImplementedError("arq has no bulk enqueue")

    def push_paced(self, count: int, interval: float) -> None:
        self.loop.run_until_complete(self._push_paced(count, interval))

    async def _push_paced(self, count: int, interval: float) -> None:
        start = time.monotonic()
        for index in range(count):
            delay = start + index * interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await self.pool.enqueue_job("noop", time.time())

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.aclose())
        self.loop.close()


def make_client() -> Client:
    return Client()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    run_worker(WorkerSettings)  # type: ignore[arg-type]
