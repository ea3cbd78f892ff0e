"""The Intake: a thread's next job, and fetching ahead only when it pays and is safe.

A fake fetcher stands in for the store (it records what it was asked); the real fetch
path, with Redis and worker processes, is covered by tests/delivery and tests/fetchers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any, cast

import pytest

import cogworker
from cogworker.core.broker import UnitOfWork
from cogworker.core.outage import OutageLog
from cogworker.worker.intake import FETCH_TIMEOUT, Intake
from cogworker.worker.prefetch import MAX_READY, MIN_REFILL, PrefetchDepth
from worker.support import wait_for


class QueueFetcher:
    """A fetcher over an in-memory queue of ``count`` jobs; records (timeout, max_jobs)."""

    name = "fake"

    def __init__(self, count: int, *, reliable: bool = True) -> None:
        self.reliable = reliable
        self.left = [UnitOfWork("default", f'{{"jid":"{n:024d}"}}') for n in range(count)]
        self.calls: list[tuple[float, int]] = []
        self._lock = threading.Lock()

    def fetch(self, queues: Sequence[str], timeout: float, max_jobs: int = 1) -> list[UnitOfWork]:
        with self._lock:
            self.calls.append((timeout, max_jobs))
            taken, self.left = self.left[:max_jobs], self.left[max_jobs:]
            return taken


class Stats:
    def __init__(self) -> None:
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1


@pytest.fixture
def intakes() -> Iterator[list[Intake]]:
    """Intakes made by :func:`make_intake`, their fetch-ahead threads stopped at the end."""
    made: list[Intake] = []
    yield made
    for intake in made:
        intake.stop()


def new_intake(fetcher: QueueFetcher, concurrency: int = 10) -> tuple[Intake, Stats]:
    """An Intake over ``fetcher``, its fetch-ahead thread not started."""
    app = cogworker.App(redis_url="redis://127.0.0.1:1/0", concurrency=concurrency)
    stats = Stats()
    intake = Intake(app, cast(Any, fetcher), OutageLog(), cast(Any, stats),
                    may_fetch=lambda: True, stopping=threading.Event())
    return intake, stats


def make_intake(made: list[Intake], fetcher: QueueFetcher,
                concurrency: int = 10) -> tuple[Intake, Stats]:
    intake, stats = new_intake(fetcher, concurrency)
    intake.start()
    made.append(intake)
    return intake, stats


def test_the_depth_is_what_the_threads_finish_in_one_round_trip() -> None:
    depth = PrefetchDepth(threads=10)
    assert (depth.low_water(), depth.refill_to()) == (1, 1)  # unknown yet: one, to measure
    depth.fetched(0.002)
    depth.job_ran(0.004)  # 10 threads finish 5 jobs during one 2 ms round trip
    assert depth.low_water() == 5
    assert depth.refill_to() == 10  # twice the low water, within the concurrency
    for _ in range(200):
        depth.job_ran(1.0)  # long jobs: nothing waits in this process
    assert (depth.low_water(), depth.refill_to()) == (0, 0)


def test_the_depth_is_bounded_and_a_fetch_ahead_takes_a_batch() -> None:
    depth = PrefetchDepth(threads=50)
    depth.fetched(0.01)
    depth.job_ran(0.0001)
    assert depth.low_water() == MAX_READY // 2  # so that twice it stays within the bound
    assert depth.refill_to() == MAX_READY
    depth = PrefetchDepth(threads=10)
    depth.fetched(0.001)
    depth.job_ran(0.01)  # one job finishes per round trip
    assert depth.low_water() == 1
    assert depth.refill_to() == MIN_REFILL  # never fetch ahead one job at a time
    assert PrefetchDepth(threads=2).refill_to() == 1  # not measured yet
    few = PrefetchDepth(threads=2)
    few.fetched(0.002)
    few.job_ran(0.002)
    assert (few.low_water(), few.refill_to()) == (2, 4)  # no more than a few per thread


def test_a_deep_queue_is_fetched_ahead_without_waiting(intakes: list[Intake]) -> None:
    fetcher = QueueFetcher(100)
    intake, _ = make_intake(intakes, fetcher)
    intake.depth.fetched(0.001)
    intake.depth.job_ran(0.002)  # low water 5, refill to 10
    first = intake.next_work()
    assert first is not None
    assert fetcher.calls == [(FETCH_TIMEOUT, 1 + 10)]  # this thread's job and the depth
    taken = [intake.next_work() for _ in range(6)]  # leaves 4 ready: below the low water
    assert wait_for(lambda: len(fetcher.calls) == 2)
    assert fetcher.calls[1] == (0.0, 10 - 4)  # topped up to 10, waiting for nothing
    assert wait_for(lambda: len(intake.ready_raws()) == 10)
    taken += [intake.next_work() for _ in range(10)]
    raws = [work.raw for work in [first, *taken] if work is not None]
    assert len(raws) == len(set(raws)) == 17
    assert intake.taken == 100 - len(fetcher.left)


def test_nothing_is_fetched_ahead_from_a_fetcher_that_does_not_hold_jobs(
        intakes: list[Intake]) -> None:
    fetcher = QueueFetcher(100, reliable=False)
    intake, _ = make_intake(intakes, fetcher)
    intake.depth.fetched(0.001)
    intake.depth.job_ran(0.002)
    for _ in range(5):
        assert intake.next_work() is not None
    # basic fetch: a job waiting in this process would be lost with it
    assert fetcher.calls == [(FETCH_TIMEOUT, 1)] * 5
    assert intake.ready_raws() == set()


def test_a_shallow_queue_is_not_fetched_ahead(intakes: list[Intake]) -> None:
    fetcher = QueueFetcher(3)
    intake, stats = make_intake(intakes, fetcher)
    intake.depth.fetched(0.001)
    intake.depth.job_ran(0.002)
    works = [intake.next_work() for _ in range(3)]
    assert all(work is not None for work in works)
    assert fetcher.calls == [(FETCH_TIMEOUT, 11)]  # came back short: no fetch ahead
    assert intake.next_work() is None  # idle: waits (the fake has nothing), flushes stats
    assert fetcher.calls[1:] == [(FETCH_TIMEOUT, 11)]
    assert stats.flushes == 1


@pytest.mark.parametrize("ready", [0, 4])
def test_ready_jobs_are_handed_back_whole(intakes: list[Intake], ready: int) -> None:
    fetcher = QueueFetcher(ready + 1)
    intake, _ = make_intake(intakes, fetcher)
    intake.depth.fetched(0.001)
    intake.depth.job_ran(0.002)
    assert intake.next_work() is not None
    assert len(intake.ready_raws()) == ready
    assert len(intake.take_ready()) == ready
    assert intake.ready_raws() == set()


def test_after_a_full_fetch_an_idle_thread_takes_jobs_without_waiting_and_times_it() -> None:
    fetcher = QueueFetcher(3)
    intake, _ = new_intake(fetcher)  # no fetch ahead: only idle threads fetch
    intake.depth.job_ran(1.0)  # long jobs: once the round trip is known, nothing waits here
    assert intake.depth.refill_to() == 1  # the round trip is not known yet
    assert intake.next_work() is not None
    assert intake.next_work() is not None  # the one fetched beside it
    assert fetcher.calls == [(FETCH_TIMEOUT, 2)]  # full: the queue may hold more
    assert intake.next_work() is not None
    assert fetcher.calls[1:] == [(0.0, 2)]  # may not wait: a round trip, measured
    assert intake.depth.refill_to() == 0  # known now: long jobs keep nothing ready
    assert intake.next_work() is None  # the last fetch came back short: wait for a job
    assert fetcher.calls[2:] == [(FETCH_TIMEOUT, 1)]


def test_an_idle_thread_waits_when_the_fetch_that_may_not_wait_finds_nothing() -> None:
    fetcher = QueueFetcher(2)
    intake, _ = new_intake(fetcher)  # no fetch ahead: only idle threads fetch
    assert intake.next_work() is not None
    assert intake.next_work() is not None
    assert intake.next_work() is None
    assert fetcher.calls == [(FETCH_TIMEOUT, 2), (0.0, 2), (FETCH_TIMEOUT, 2)]


def test_a_basic_fetcher_is_never_asked_for_a_fetch_that_may_not_wait() -> None:
    fetcher = QueueFetcher(3, reliable=False)  # its fetch pops one, blocking
    intake, _ = new_intake(fetcher)  # no fetch ahead: only idle threads fetch
    for _ in range(3):
        assert intake.next_work() is not None
    assert fetcher.calls == [(FETCH_TIMEOUT, 1)] * 3
