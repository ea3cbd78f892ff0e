"""What the systems' job modules share: the Redis address, the round-trip key, a sync client.

Each system's jobs and client live in a module of this package
(``benchmarks.systems.<name>_app``) that only the worker and client subprocesses import,
so ``--systems`` can pick any subset of what is installed. Each module defines two jobs:

* ``noop``: appends one record to the counter file (:mod:`benchmarks.counter`), nothing else;
* ``incr``: one Redis round trip first, ``INCR`` of :data:`ROUND_TRIP_KEY` over a connection
  of the job's own (a Redis client made once per worker process, as users write it), then
  the same record.

This package is imported by the job modules, so it stays as light as they are: the first
enqueue in a fresh process (``benchmarks/cold_start.py``) is timed with it inside the
window. The harness's catalogue of systems is :mod:`benchmarks.catalog`.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

REDIS_URL_ENV = "BENCH_REDIS_URL"
ROUND_TRIP_KEY = "bench-round-trips"  # outside every system's own keys


def redis_url() -> str:
    """The Redis the harness gave this process (the delay proxy's address when there is one)."""
    return os.environ.get(REDIS_URL_ENV) or "redis://127.0.0.1:6379/0"


class SyncClient:
    """A client whose library enqueues with a blocking call: subclasses define ``push``."""

    def push(self, argument: float) -> None:
        raise NotImplementedError

    def push_each(self, arguments: Sequence[float]) -> None:
        push = self.push
        for argument in arguments:
            push(argument)

    def push_bulk(self, arguments: Sequence[int]) -> None:
        raise NotImplementedError(f"{type(self).__module__} has no bulk enqueue")

    def push_paced(self, count: int, interval: float) -> None:
        start = time.monotonic()
        for index in range(count):
            delay = start + index * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self.push(time.time())

    def close(self) -> None:
        pass
