"""BackgroundFlush: periodic writes, one last write at stop, failures reported not raised."""

from __future__ import annotations

import logging
import threading

import pytest

from cogworker.core.background_flush import BackgroundFlush
from cogworker.core.errors import BrokerUnavailableError


class Recorder:
    def __init__(self) -> None:
        self.calls = 0
        self.flushed = threading.Event()
        self.fail_next = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.fail_next:
            self.fail_next -= 1
            raise BrokerUnavailableError("redis is away")
        self.flushed.set()


def test_flushes_on_its_interval_and_once_more_at_stop() -> None:
    recorder = Recorder()
    flusher = BackgroundFlush("test-flush", recorder, interval=0.01)
    flusher.start()
    assert recorder.flushed.wait(5)
    flusher.stop()
    calls_at_stop = recorder.calls
    assert not flusher.running
    assert calls_at_stop >= 2  # at least one periodic write and the last one


def test_stop_writes_whatever_was_added_before_it() -> None:
    items: list[int] = []
    written: list[int] = []
    lock = threading.Lock()

    def flush() -> None:
        with lock:
            written.extend(items)
            items.clear()

    flusher = BackgroundFlush("test-flush", flush, interval=3600)
    flusher.start()
    with lock:
        items.extend([1, 2, 3])
    flusher.stop()
    assert written == [1, 2, 3]


def test_flush_soon_wakes_the_thread_before_the_interval() -> None:
    recorder = Recorder()
    flusher = BackgroundFlush("test-flush", recorder, interval=3600)
    flusher.start()
    flusher.flush_soon()
    assert recorder.flushed.wait(5)
    flusher.stop()


def test_stop_without_start_flushes_on_the_caller() -> None:
    recorder = Recorder()
    BackgroundFlush("test-flush", recorder).stop()
    assert recorder.calls == 1


def test_a_failing_flush_is_reported_once_and_tried_again(
        caplog: pytest.LogCaptureFixture) -> None:
    recorder = Recorder()
    recorder.fail_next = 3
    flusher = BackgroundFlush("test-flush", recorder, interval=0.01)
    with caplog.at_level(logging.INFO, logger="cogworker.outage"):
        flusher.start()
        assert recorder.flushed.wait(5)
        flusher.stop()
    assert recorder.calls >= 4
    outage_lines = [r for r in caplog.records if "test-flush" in r.getMessage()]
    assert 1 <= len(outage_lines) <= 2  # the first failure, and the recovery


def test_start_twice_runs_one_thread() -> None:
    recorder = Recorder()
    flusher = BackgroundFlush("test-flush-twice", recorder, interval=3600)
    flusher.start()
    flusher.start()
    named = [t for t in threading.enumerate() if t.name == "test-flush-twice"]
    flusher.stop()
    assert len(named) == 1


def test_a_non_positive_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="above 0"):
        BackgroundFlush("x", lambda: None, interval=0)
