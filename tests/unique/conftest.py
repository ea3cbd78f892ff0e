"""Fixtures for the unique plugin tests: an app on the test's own namespace."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

import cogworker


@pytest.fixture
def app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[cogworker.App]:
    """An app on the session server in this test's namespace (deleted afterwards)."""
    application = cogworker.App(redis_url=redis_url, namespace=namespace)
    yield application
    application.close()
