"""RQ: the no-op job, the client (``Queue.enqueue_many`` for bulk), and the worker's config.

The worker reads this module as its ``--config`` (``REDIS_URL``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from redis import Redis
from rq import Queue

from benchmarks.counter import record
from benchmarks.systems import REDIS_URL_ENV, SyncClient

REDIS_URL = os.environ.get(REDIS_URL_ENV, "")
QUEUE_NAME = "bench"


def noop(argument: float) -> None:
    record(argument)


class Client(SyncClient):
    def __init__(self) -> None:
        self.redis = Redis.from_url(REDIS_URL)
        self.queue = Queue(QUEUE_NAME, connection=self.redis)

    def push(self, argument: float) -> None:
        self.queue.enqueue(noop, argument)

    def push_bulk(self, arguments: Sequence[int]) -> None:
        for start in range(0, len(arguments), 1000):
            chunk = arguments[start:start + 1000]
            self.queue.enqueue_many([Queue.prepare_data(noop, (a,)) for a in chunk])

    def close(self) -> None:
        self.redis.close()


def make_client() -> Client:
    return Client()
