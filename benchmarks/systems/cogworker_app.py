"""cogworker: the two jobs and the client (``app.push_bulk`` for bulk)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import redis

import cogworker
from benchmarks.counter import record
from benchmarks.systems import ROUND_TRIP_KEY, SyncClient, redis_url

PLUGINS_ENV = "BENCH_COGWORKER_PLUGINS"
"""Plugins the app activates, comma-separated (``benchmarks/run plugin-cost`` sets it, so
the client's pushes and the worker both run with them)."""

app = cogworker.App(redis_url=redis_url(), namespace="bench", plugins=tuple(
    name for name in os.environ.get(PLUGINS_ENV, "").split(",") if name))
job_redis = redis.Redis.from_url(redis_url())  # the jobs' own client, one per process


@app.job
def noop(argument: float) -> None:
    record(argument)


@app.job
def incr(argument: float) -> None:
    job_redis.incr(ROUND_TRIP_KEY)
    record(argument)


JOBS = {"noop": noop, "incr": incr}


class Client(SyncClient):
    def __init__(self, job: str) -> None:
        self.job = JOBS[job]

    def push(self, argument: float) -> None:
        self.job.perform_async(argument)

    def push_bulk(self, arguments: Sequence[int]) -> None:
        app.push_bulk(self.job, [[argument] for argument in arguments])

    def close(self) -> None:
        app.close()
        job_redis.close()


def make_client(job: str) -> Client:
    return Client(job)
