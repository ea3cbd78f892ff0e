"""arq: the two coroutines, the client (no bulk enqueue in arq) and the worker launcher.

``python -m benchmarks.systems.arq_app quiet|default`` runs the worker like the ``arq``
command does: ``default`` installs arq's own logging set-up, as the command does without
``--verbose``; ``quiet`` sets the log level to WARNING (the command has no flag for that).
The round-trip job's client is made in ``on_startup`` and kept in the job context, which
is how arq's documentation shares a connection between jobs.
"""

from __future__ import annotations

import asyncio
import logging
import logging.config
import sys
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.logs import default_log_config
from arq.worker import run_worker
from redis.asyncio import Redis

from benchmarks.counter import record
from benchmarks.systems import ROUND_TRIP_KEY, redis_url

REDIS_SETTINGS = RedisSettings.from_dsn(redis_url())


async def noop(ctx: dict[str, Any], argument: float) -> None:
    record(argument)


async def incr(ctx: dict[str, Any], argument: float) -> None:
    await ctx["job_redis"].incr(ROUND_TRIP_KEY)
    record(argument)


async def startup(ctx: dict[str, Any]) -> None:
    ctx["job_redis"] = Redis.from_url(redis_url())


async def shutdown(ctx: dict[str, Any]) -> None:
    await ctx["job_redis"].aclose()


class WorkerSettings:
    functions: ClassVar[list[Any]] = [noop, incr]
    on_startup = startup
    on_shutdown = shutdown
    redis_settings = REDIS_SETTINGS


class Client:
    """Drives arq from one event loop, so no loop is entered per job."""

    def __init__(self, job: str) -> None:
        if job not in ("noop", "incr"):
            raise KeyError(job)
        self.job = job
        self.loop = asyncio.new_event_loop()
        self.pool: ArqRedis = self.loop.run_until_complete(create_pool(REDIS_SETTINGS))

    def push_each(self, arguments: Sequence[float]) -> None:
        self.loop.run_until_complete(self._push_each(arguments))

    async def _push_each(self, arguments: Sequence[float]) -> None:
        for argument in arguments:
            await self.pool.enqueue_job(self.job, argument)

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
            await self.pool.enqueue_job(self.job, time.time())

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.aclose())
        self.loop.close()


def make_client(job: str) -> Client:
    return Client(job)


def _configure_logging(mode: str) -> None:
    if mode == "default":
        logging.config.dictConfig(default_log_config(verbose=False))
    elif mode == "quiet":
        logging.basicConfig(level=logging.WARNING)
    else:
        raise SystemExit(f"usage: python -m benchmarks.systems.arq_app quiet|default "
                         f"(got {mode!r})")


if __name__ == "__main__":
    _configure_logging(sys.argv[1] if len(sys.argv) > 1 else "quiet")
    run_worker(WorkerSettings)  # type: ignore[arg-type]
