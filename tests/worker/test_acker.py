"""The AckBatcher: acks wait a little for company, and a stop writes them all at once.

A recording settler stands in for the store; the acks' real round trips (and that a
crash before one makes the job run again) are covered by tests/delivery.
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

FOREVER = 3600.0  # a linger no test waits out: only a full batch or a stop ends it


class RecordingSettler:
    """Records each batch it is asked to acknowledge; can fail its first ``failures``."""

    def __init__(self, failures: int = 0) -> None:
        self.batches: list[list[str]] = []
        self.failures = failures
        self._lock = threading.Lock()

    def acknowledge_many(self, works: Sequence[UnitOfWork]) -> None:
        with self._lock:
            if self.failures:
                self.failures -= 1
                raise RuntimeError("the store is down")
            self.batches.append([work.raw for work in works])

    def written(self) -> list[list[str]]:
        with self._lock:
            return [list(batch) for batch in self.batches]


def work(number: int) -> UnitOfWork:
    return UnitOfWork("default", f'{{"jid":"{number:024d}"}}')


@pytest.fixture
def settler() -> RecordingSettler:
    return RecordingSettler()


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


def test_acks_that_fill_a_batch_share_one_round_trip_without_waiting_out_the_linger(
        settler: RecordingSettler, started: list[AckBatcher]) -> None:
    batcher = batcher_for(settler, started, max_batch=3, linger=FOREVER)
    for number in range(3):
        batcher.submit(work(number))
    wait_for(settler.written, timeout=10)
    assert settler.written() == [[work(n).raw for n in range(3)]]


def test_more_acks_than_a_batch_go_in_full_batches_and_the_rest_waits(
        settler: RecordingSettler, started: list[AckBatcher]) -> None:
    batcher = batcher_for(settler, started, max_batch=2, linger=FOREVER)
    for number in range(5):
        batcher.submit(work(number))
    wait_for(lambda: len(settler.written()) == 2, timeout=10)
    assert settler.written() == [[work(0).raw, work(1).raw], [work(2).raw, work(3).raw]]
    assert batcher.pending_raws() == {work(4).raw}


def test_a_lone_ack_is_written_when_the_linger_ends(
        settler: RecordingSettler, started: list[AckBatcher]) -> None:
    batcher = batcher_for(settler, started, max_batch=50, linger=0.05)
    batcher.submit(work(7))
    wait_for(settler.written, timeout=10)
    assert settler.written() == [[work(7).raw]]
    assert batcher.pending_raws() == set()


def test_a_stop_writes_the_lingering_acks_at_once_and_ends_the_thread(
        settler: RecordingSettler) -> None:
    batcher = AckBatcher(cast(Settler, settler), max_batch=50, linger=FOREVER)
    batcher.submit(work(1))
    batcher.submit(work(2))
    assert batcher.pending_raws() == {work(1).raw, work(2).raw}
    batcher.stop(timeout=10)  # a linger waited out would leave the thread alive here
    assert settler.written() == [[work(1).raw, work(2).raw]]
    assert not batcher._thread.is_alive()


def test_a_batch_that_failed_does_not_end_the_thread(started: list[AckBatcher]) -> None:
    settler = RecordingSettler(failures=1)
    batcher = batcher_for(settler, started, max_batch=1, linger=FOREVER)
    batcher.submit(work(1))  # the settler fails it (the real one remembers it as pending)
    wait_for(lambda: settler.failures == 0 and not batcher.pending_raws(), timeout=10)
    batcher.submit(work(2))
    wait_for(settler.written, timeout=10)
    assert settler.written() == [[work(2).raw]]
