"""Fixtures for the worker tests: apps on the test namespace, Redis servers that refuse."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from cogworker.app import App
from cogworker.redis.server import RedisServer
from helpers.redis_servers import RedisServerFactory
from worker.support import make_replica_of_nothing

MakeApp = Callable[..., App]

FAST = {"heartbeat_interval": 0.2, "poll_interval": 0.2, "concurrency": 2}


@pytest.fixture
def make_app(redis_url: str, namespace: str,
             redis_client: redis.Redis) -> Iterator[MakeApp]:
    """``make_app(url=None, **settings)``: an App on this test's namespace, fast intervals.

    Depends on ``redis_client`` so the namespace is deleted after the test.
    """
    apps: list[App] = []

    def make(url: str | None = None, **settings: Any) -> App:
        app = App(redis_url=url or redis_url, namespace=namespace, **{**FAST, **settings})
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


@pytest.fixture
def readonly_server(redis_server_factory: RedisServerFactory) -> RedisServer:
    """A private server whose writes fail with READONLY (reads still work);
    ``support.promote(server)`` makes it writable."""
    server = redis_server_factory(appendonly=False)
    make_replica_of_nothing(server, serve_reads=True)
    return server


@pytest.fixture
def masterdown_server(redis_server_factory: RedisServerFactory) -> RedisServer:
    """A private server whose reads and writes fail with MASTERDOWN at once;
    ``support.promote(server)`` brings it back."""
    server = redis_server_factory(appendonly=False)
    make_replica_of_nothing(server, serve_reads=False)
    return server
