"""An app on the session's Redis (the default plugins: ``workflows`` among them) and a
real worker (the ``Launcher`` with its threads) run inside the test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cogworker.app import App


@pytest.fixture
def app(redis_url: str, namespace: str) -> Iterator[App]:
    application = App(redis_url=redis_url, namespace=namespace, concurrency=2, timeout=1.0,
                      poll_interval=0.2)
    try:
        yield application
    finally:
        application.close()
