"""An app with the ``status`` and ``attempts`` plugins on the session's Redis, and a real
worker (the ``Launcher`` with its threads) run inside the test."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from cogworker.app import App
from cogworker.worker.launcher import Launcher

WAIT = 30.0  # seconds any single event may take on a loaded machine


@pytest.fixture
def app(redis_url: str, namespace: str) -> Iterator[App]:
    application = App(redis_url=redis_url, namespace=namespace, concurrency=2, timeout=1.0,
                      poll_interval=0.2, plugins=("status", "attempts"))
    try:
        yield application
    finally:
        application.close()


@contextmanager
def working(app: App) -> Iterator[Launcher]:
    """The app's worker runs on a thread inside the block; it stops cleanly after it."""
    launcher = Launcher(app)
    exit_codes: list[int] = []
    thread = threading.Thread(target=lambda: exit_codes.append(launcher.run()),
                              name="status-worker")
    thread.start()
    try:
        assert launcher.started.wait(WAIT), "the worker did not start"
        yield launcher
    finally:
        launcher.request_stop()
        thread.join(WAIT)
    assert not thread.is_alive(), "the worker did not stop"
    assert exit_codes == [0]


def eventually(condition: Callable[[], bool], what: Callable[[], object],
               timeout: float = WAIT) -> None:
    """Wait until ``condition()`` holds (the worker writes statuses once a second)."""
    done = threading.Event()
    deadline = threading.Timer(timeout, done.set)
    deadline.start()
    try:
        while not condition():
            if done.wait(0.05):
                raise AssertionError(f"not reached in {timeout:.0f} s; last seen: {what()!r}")
    finally:
        deadline.cancel()
