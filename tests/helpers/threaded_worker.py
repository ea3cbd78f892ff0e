"""A real worker (the :class:`Launcher`) on a thread of the test process, and a countdown
the jobs report to: for tests that need a worker's threads but not its own process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cogworker.app import App
from cogworker.worker.launcher import Launcher

WAIT = 30.0  # seconds any single event may take on a loaded machine


@contextmanager
def working(app: App, thread_name: str = "test-worker") -> Iterator[Launcher]:
    """The app's worker runs on a thread inside the block; it stops cleanly after it (its
    shutdown hooks run: the plugins' last writes)."""
    launcher = Launcher(app)
    exit_codes: list[int] = []
    thread = threading.Thread(target=lambda: exit_codes.append(launcher.run()),
                              name=thread_name)
    thread.start()
    try:
        assert launcher.started.wait(WAIT), "the worker did not start"
        yield launcher
    finally:
        launcher.request_stop()
        thread.join(WAIT)
    assert not thread.is_alive(), "the worker did not stop"
    assert exit_codes == [0]


class Countdown:
    """Set once ``count`` calls were recorded."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.calls: list[Any] = []
        self._lock = threading.Lock()
        self.done = threading.Event()

    def record(self, value: Any) -> None:
        with self._lock:
            self.calls.append(value)
            if len(self.calls) >= self.count:
                self.done.set()
