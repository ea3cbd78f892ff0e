"""An app on the session's Redis with the ``cancel`` plugin (on by default) and the
``status`` plugin, and what its tests share."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from cogworker.app import App
from helpers.threaded_worker import WAIT


@pytest.fixture
def app(redis_url: str, namespace: str) -> Iterator[App]:
    application = App(redis_url=redis_url, namespace=namespace, concurrency=2, timeout=1.0,
                      poll_interval=0.2, plugins=("status",))
    try:
        yield application
    finally:
        application.close()


def eventually(condition: Callable[[], bool], what: Callable[[], object],
               timeout: float = WAIT) -> None:
    """Wait until ``condition()`` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout:.0f} s; last seen: {what()!r}")
        time.sleep(0.02)
