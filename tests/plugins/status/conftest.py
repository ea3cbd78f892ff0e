"""An app with the ``status`` and ``attempts`` plugins on the session's Redis, and a real
worker (the ``Launcher`` with its threads) run inside the test."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from cogworker.app import App
from helpers.threaded_worker import WAIT


@pytest.fixture
def app(redis_url: str, namespace: str) -> Iterator[App]:
    application = App(redis_url=redis_url, namespace=namespace, concurrency=2, timeout=1.0,
                      poll_interval=0.2, plugins=("status", "attempts"))
    try:
        yield application
    finally:
        application.close()


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
