"""RQ: the two jobs, the client (``Queue.enqueue_many`` for bulk), and the worker's config.

The worker reads this module as its ``--config`` (``REDIS_URL``).
"""

from __future__ import annotations

from collections.abc import Sequence

from redis import Redis
from rq import Queue

from benchmarks.counter import record
from benchmarks.systems import ROUND_TRIP_KEY, SyncClient, redis_url

REDIS_URL = redis_url()
QUEUE_NAME = "bench"
job_redis = Redis.from_url(REDIS_URL)  # the jobs' own client, one per worker process


def noop(argument: float) -> None:
    record(argument)


def incr(argument: float) -> None:
    job_redis.incr(ROUND_TRIP_KEY)
    record(argument)


JOBS = {"noop": noop, "incr": incr}


class Client(SyncClient):
    def __init__(self, job: str) -> None:
        self.job = JOBS[job]
        self.redis = Redis.from_url(REDIS_URL)
        self.queue = Queue(QUEUE_NAME, connection=self.redis)

    def push(self, argument: float) -> None:
        self.queue.enqueue(self.job, argument)

    def push_bulk(self, arguments: Sequence[int]) -> None:
        for start in range(0, len(arguments), 1000):
            chunk = arguments[start:start + 1000]
            self.queue.enqueue_many([Queue.prepare_data(self.job, (a,)) for a in chunk])

    def close(self) -> None:
        self.redis.close()
        job_redis.close()


def make_client(job: str) -> Client:
    return Client(job)
