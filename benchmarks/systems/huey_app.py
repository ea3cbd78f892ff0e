"""huey: the two tasks and the client (no bulk enqueue in huey)."""

from __future__ import annotations

import redis
from huey import RedisHuey  # type: ignore[import-untyped]

from benchmarks.counter import record
from benchmarks.systems import ROUND_TRIP_KEY, SyncClient, redis_url

huey = RedisHuey("bench", url=redis_url())
job_redis = redis.Redis.from_url(redis_url())  # the tasks' own client, one per process


@huey.task()  # type: ignore[untyped-decorator]
def noop(argument: float) -> None:
    record(argument)


@huey.task()  # type: ignore[untyped-decorator]
def incr(argument: float) -> None:
    job_redis.incr(ROUND_TRIP_KEY)
    record(argument)


JOBS = {"noop": noop, "incr": incr}


class Client(SyncClient):
    def __init__(self, job: str) -> None:
        self.job = JOBS[job]

    def push(self, argument: float) -> None:
        self.job(argument)

    def close(self) -> None:
        huey.storage.conn.close()
        job_redis.close()


def make_client(job: str) -> Client:
    return Client(job)
