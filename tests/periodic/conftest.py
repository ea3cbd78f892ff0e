"""Fixtures for the cron tests: apps on the test's namespace, a fake clock, ticker factory."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from cogworker.app import App
from cogworker.core.outage import OutageLog
from cogworker.redis.server import RedisServer
from cogworker.redis.server_process import free_port
from cogworker.worker.ticker import Ticker
from helpers.redis_servers import RedisServerFactory
from periodic.support import FakeClock, StandInManager

MakeApp = Callable[..., App]
MakeTicker = Callable[..., Ticker]


@pytest.fixture
def make_app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[MakeApp]:
    """``make_app(url=None, **settings)``: an App on this test's namespace (closed after).

    Depends on ``redis_client`` so the namespace is deleted after the test.
    """
    apps: list[App] = []

    def make(url: str | None = None, **settings: Any) -> App:
        application = App(redis_url=url or redis_url, namespace=namespace, **settings)
        apps.append(application)
        return application

    yield make
    for application in apps:
        application.close()


@pytest.fixture
def app(make_app: MakeApp) -> App:
    return make_app()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_ticker(clock: FakeClock) -> Iterator[MakeTicker]:
    """``make_ticker(app, **Ticker kwargs)``: a ticker on the fake clock, ready at once."""
    tickers: list[Ticker] = []

    def make(application: App, **kwargs: Any) -> Ticker:
        ready = kwargs.pop("ready", None)
        if ready is None:
            ready = threading.Event()
            ready.set()
        kwargs.setdefault("clock", clock.time)
        kwargs.setdefault("monotonic", clock.monotonic)
        manager = kwargs.pop("manager", None) or StandInManager()
        ticker = Ticker(application, manager, OutageLog(), ready, **kwargs)
        tickers.append(ticker)
        return ticker

    yield make
    for ticker in tickers:
        ticker.stop()


@pytest.fixture
def readonly_server(redis_server_factory: RedisServerFactory) -> RedisServer:
    """A replica of a master that does not exist: writes fail with READONLY at once (Redis
    unavailable for writes). ``REPLICAOF NO ONE`` makes it writable."""
    return redis_server_factory(
        appendonly=False, extra_args=("--replicaof", "127.0.0.1", str(free_port())))
