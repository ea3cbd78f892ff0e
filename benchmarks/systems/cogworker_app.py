"""cogworker: the two jobs and the client (``app.push_bulk`` for bulk)."""

from __future__ import annotations

from collections.abc import Sequence

import redis

import cogworker
from benchmarks.counter import record
from benchmarks.systems import ROUND_TRIP_KEY, SyncClient, redis_url

app = cogworker.App(redis_url=redis_url(), namespace="bench")
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
