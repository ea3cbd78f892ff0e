"""The AckBatcher: what finishes during one ack round trip goes in the next, and a stop
writes every pending ack.

A recording settler stands in for the store: it can hold its first round trip open until
the test lets it go, so that what gathers meanwhile is known. The acks' real round trips
(and that a crash before one makes the job run again) are covered by tests/delivery.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any, cast

import pytest

from cogworker.core.broker import UnitOfWork
from cogworker.worker.acker import AckBatcher
from cogworker.worker.settlement import Settler
from worker.support import wait_for


class RecordingSettler:
    """Records each batch; holds the first round trip until :meth:`release` (when
    ``hold``), and fails its first ``failures`` batches."""

    def __init__(self, hold: bool = False, failures: int = 0) -> None:
        self.batches: list[list[str]] = []
        self.failures = failures
        self.first_started = threading.Event()
        self._release = threading.Event()
        if not hold:
            self._release.set()
        self._lock = threading.Lock()

    def acknowledge_many(self, works: Sequence[UnitOfWork]) -> None:
        self.first_started.set()
        self._release.wait(10)
        with self._lock:
            if self.failures:
                self.failures -= 1
                raise RuntimeError("the store is down")
            self.batches.append([work.raw for work in works])

    def release(self) -> None:
        self._release.set()

    def written(self) -> list[list[str]]:
        with self._lock:
            return [list(batch) for batch in self.batches]


def work(number: int) -> UnitOfWork:
    return UnitOfWork("default", f'{{"jid":"{number:024d}"}}')


def raws(*numbers: int) -> list[str]:
    return [work(number).raw for number in numbers]


@pytest.fixture
def started() -> Iterator[list[AckBatcher]]:
    batchers: list[AckBatcher] = []
    yield batchers
    for batcher in batchers:
        batcher.stop(timeout=10)


def batcher_for(settler: Any, started: list[AckBatcher], **options: Any) -> AckBatcher:
    batcher = AckBatcher(cast(Settler, settler), **options)
    started.append(batcher)
    return batcher


def test_acks_that_gather_during_a_round_trip_share_the_next_one(
        started: list[AckBatcher]) -> None:
    settler = RecordingSettler(hold=True)
    batcher = batcher_for(settler, started)
    batcher.submit(work(1))
    assert settler.first_started.wait(10)
    for number in (2, 3, 4):
        batcher.submit(work(number))
    assert batcher.pending_raws() == set(raws(1, 2, 3, 4))  # in flight and queued
    settler.release()
    wait_for(lambda: len(settler.written()) == 2, timeout=10)
    assert settler.written() == [raws(1), raws(2, 3, 4)]
    assert batcher.pending_raws() == set()


def test_a_batch_holds_at_most_max_batch_acks(started: list[AckBatcher]) -> None:
    settler = RecordingSettler(hold=True)
    batcher = batcher_for(settler, started, max_batch=2)
    batcher.submit(work(1))
    assert settler.first_started.wait(10)
    for number in (2, 3, 4, 5, 6):
        batcher.submit(work(number))
    settler.release()
    wait_for(lambda: len(settler.written()) == 4, timeout=10)
    assert settler.written() == [raws(1), raws(2, 3), raws(4, 5), raws(6)]


def test_a_stop_writes_every_pending_ack_before_the_thread_ends() -> None:
    settler = RecordingSettler(hold=True)
    batcher = AckBatcher(cast(Settler, settler))
    batcher.submit(work(1))
    assert settler.first_started.wait(10)
    batcher.submit(work(2))
    batcher.submit(work(3))
    stopping = threading.Thread(target=batcher.stop, kwargs={"timeout": 10})
    stopping.start()
    settler.release()
    stopping.join(15)
    assert not stopping.is_alive()
    assert settler.written() == [raws(1), raws(2, 3)]
    assert not batcher._thread.is_alive()


def test_a_batch_that_failed_does_not_end_the_thread(started: list[AckBatcher]) -> None:
    settler = RecordingSettler(failures=1)
    batcher = batcher_for(settler, started)
    batcher.submit(work(1))  # the settler fails it (the real one remembers it as pending)
    wait_for(lambda: settler.failures == 0 and not batcher.pending_raws(), timeout=10)
    batcher.submit(work(2))
    wait_for(settler.written, timeout=10)
    assert settler.written() == [raws(2)]
