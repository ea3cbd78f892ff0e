"""Celery: the two tasks and the client (no bulk enqueue in Celery)."""

from __future__ import annotations

import redis
from celery import Celery  # type: ignore[import-untyped]

from benchmarks.counter import record
from benchmarks.systems import ROUND_TRIP_KEY, SyncClient, redis_url

app = Celery("bench", broker=redis_url())
app.conf.broker_connection_retry_on_startup = True  # silences a start-up warning only
job_redis = redis.Redis.from_url(redis_url())  # the tasks' own client, one per process


@app.task(name="bench.noop")  # type: ignore[untyped-decorator]
def noop(argument: float) -> None:
    record(argument)


@app.task(name="bench.incr")  # type: ignore[untyped-decorator]
def incr(argument: float) -> None:
    job_redis.incr(ROUND_TRIP_KEY)
    record(argument)


JOBS = {"noop": noop, "incr": incr}


class Client(SyncClient):
    def __init__(self, job: str) -> None:
        self.job = JOBS[job]

    def push(self, argument: float) -> None:
        self.job.delay(argument)

    def close(self) -> None:
        app.close()
        job_redis.close()


def make_client(job: str) -> Client:
    return Client(job)
