"""Apps on the test's Redis and namespace, with short beats and polls, for the limits
plugin's tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

import cogworker

FAST: dict[str, Any] = {"heartbeat_interval": 0.2, "poll_interval": 0.2, "concurrency": 2}

MakeApp = Callable[..., cogworker.App]


@pytest.fixture
def make_app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[MakeApp]:
    """``make_app(**settings)``: an App on this test's namespace (limits is a default
    plugin), closed after the test."""
    apps: list[cogworker.App] = []

    def make(**settings: Any) -> cogworker.App:
        app = cogworker.App(redis_url=redis_url, namespace=namespace, **{**FAST, **settings})
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()
