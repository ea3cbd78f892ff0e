"""An app on the session's Redis with the ``batches`` plugin (a default one), the jobs the
batch tests share, and a ledger of what ran and which callbacks fired."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cogworker.app import App
from helpers.threaded_worker import WAIT


class Ledger:
    """What the jobs and callbacks did, in order (the test process's memory: these tests
    run their worker on a thread)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, Any]] = []
        self._changed = threading.Condition()

    def add(self, kind: str, value: Any) -> None:
        with self._changed:
            self.entries.append((kind, value))
            self._changed.notify_all()

    def of(self, kind: str) -> list[Any]:
        with self._changed:
            return [value for k, value in self.entries if k == kind]

    def wait_for(self, condition: Callable[[Ledger], object], timeout: float = WAIT) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: condition(self), timeout):
                raise AssertionError(f"not reached in {timeout:.0f} s; ledger: "
                                     f"{self.entries!r}")


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def app(redis_url: str, namespace: str) -> Iterator[App]:
    application = App(redis_url=redis_url, namespace=namespace, concurrency=4, timeout=1.0,
                      poll_interval=0.2)
    try:
        yield application
    finally:
        application.close()


def until(condition: Callable[[], object], what: str, timeout: float = WAIT) -> None:
    """Poll ``condition`` (state outside the ledger: Redis) until it holds."""
    done = threading.Event()
    timer = threading.Timer(timeout, done.set)
    timer.start()
    try:
        while not condition():
            if done.wait(0.02):
                raise AssertionError(f"not reached in {timeout:.0f} s: {what}")
    finally:
        timer.cancel()
