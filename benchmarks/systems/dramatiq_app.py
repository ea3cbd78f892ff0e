"""Dramatiq: the two actors and the client (no bulk enqueue in Dramatiq)."""

from __future__ import annotations

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker

from benchmarks.counter import record
from benchmarks.systems import ROUND_TRIP_KEY, SyncClient, redis_url

broker = RedisBroker(url=redis_url())  # type: ignore[no-untyped-call]
dramatiq.set_broker(broker)
job_redis = redis.Redis.from_url(redis_url())  # the actors' own client, one per process


@dramatiq.actor(queue_name="bench")
def noop(argument: float) -> None:
    record(argument)


@dramatiq.actor(queue_name="bench")
def incr(argument: float) -> None:
    job_redis.incr(ROUND_TRIP_KEY)
    record(argument)


JOBS = {"noop": noop, "incr": incr}


class Client(SyncClient):
    def __init__(self, job: str) -> None:
        self.job = JOBS[job]

    def push(self, argument: float) -> None:
        self.job.send(argument)

    def close(self) -> None:
        broker.close()
        job_redis.close()


def make_client(job: str) -> Client:
    return Client(job)
