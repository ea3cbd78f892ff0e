"""The systems under test: how to start each one's worker, and where its client lives.

The harness imports no queue library itself: each system's jobs and client are in a module
of this package (``benchmarks.systems.<name>_app``) that only the worker and the client
subprocesses import, so ``--systems`` can pick any subset of what is installed.

Every worker runs with its library's defaults except for the pool shape named in
``setup`` and log level WARNING (per-job log lines would measure the terminal, not the
queue). Jobs are no-ops that append one record to the counter file
(:mod:`benchmarks.counter`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

REDIS_URL_ENV = "BENCH_REDIS_URL"


class QueueClient(Protocol):
    """The enqueue side of one system, as the client subprocess drives it."""

    def push_each(self, arguments: Sequence[float]) -> None:
        """Enqueue one no-op job per argument, one call (and round trip) each, in order."""

    def push_bulk(self, arguments: Sequence[int]) -> None:
        """Enqueue many at once (only called when the system's ``bulk`` is true)."""

    def push_paced(self, count: int, interval: float) -> None:
        """Enqueue ``count`` jobs ``interval`` seconds apart, each given its enqueue time."""

    def close(self) -> None:
        """Release connections."""


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


@dataclass(frozen=True)
class System:
    name: str
    distribution: str  # for the version shown in the report
    setup: str  # the pool shape, as shown in the report
    module: str  # the module holding the jobs and ``make_client(redis_url)``
    worker_args: Callable[[str], list[str]]  # python executable -> argv
    bulk: bool  # whether the library has a bulk enqueue

    def worker_command(self, python: str) -> list[str]:
        return self.worker_args(python)


def _cogworker(*extra: str) -> Callable[[str], list[str]]:
    def argv(python: str) -> list[str]:
        return [python, "-m", "cogworker", "run", "-A",
                "benchmarks.systems.cogworker_app:app", "-c", "10",
                "--log-level", "WARNING", *extra]

    return argv


def _rq(python: str) -> list[str]:
    return [python, "-m", "rq.cli", "worker", "--worker-class", "rq.worker.SimpleWorker",
            "--path", ".", "--logging_level", "WARNING", "--config",
            "benchmarks.systems.rq_app", "bench"]


def _dramatiq(python: str) -> list[str]:
    return [python, "-m", "dramatiq", "benchmarks.systems.dramatiq_app",
            "--processes", "1", "--threads", "8"]


def _celery(python: str) -> list[str]:
    return [python, "-m", "celery", "-A", "benchmarks.systems.celery_app", "worker",
            "--pool", "threads", "--concurrency", "8", "--loglevel", "WARNING"]


def _arq(python: str) -> list[str]:
    return [python, "-m", "benchmarks.systems.arq_app"]


def _huey(python: str) -> list[str]:
    return [python, "-m", "huey.bin.huey_consumer", "benchmarks.systems.huey_app.huey",
            "--workers", "8", "--worker-type", "thread", "--quiet"]


SYSTEMS: dict[str, System] = {
    system.name: system
    for system in (
        System("cogworker-reliable", "cogworker", "reliable fetch, 10 threads",
               "benchmarks.systems.cogworker_app", _cogworker(), bulk=True),
        System("cogworker-basic", "cogworker", "basic fetch, 10 threads",
               "benchmarks.systems.cogworker_app", _cogworker("--plugin", "basic"),
               bulk=True),
        System("rq", "rq", "SimpleWorker", "benchmarks.systems.rq_app", _rq, bulk=True),
        System("dramatiq", "dramatiq", "1 process, 8 threads",
               "benchmarks.systems.dramatiq_app", _dramatiq, bulk=False),
        System("celery", "celery", "threads pool, 8", "benchmarks.systems.celery_app",
               _celery, bulk=False),
        System("arq", "arq", "asyncio, max_jobs 10 (default)", "benchmarks.systems.arq_app",
               _arq, bulk=False),
        System("huey", "huey", "8 threads", "benchmarks.systems.huey_app", _huey,
               bulk=False),
    )
}
BASELINE = "cogworker-reliable"
