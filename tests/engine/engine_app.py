"""An app wired to the in-memory broker, for engine unit tests."""

from __future__ import annotations

from typing import Any, cast

import cogworker
from cogworker.core.broker import Broker
from cogworker.core.outage import OutageLog
from cogworker.testing.memory import MemoryBroker, MemoryFetcher
from cogworker.worker.async_runner import AsyncRunner
from cogworker.worker.executor import JobRunner
from cogworker.worker.settlement import Settler
from cogworker.worker.stats_buffer import StatsBuffer


def memory_app(**settings: Any) -> tuple[cogworker.App, MemoryBroker]:
    app = cogworker.App(
        redis_url="redis://127.0.0.1:1/0",
        fetch="cogworker.testing.memory_plugin:",
        plugins=("no:unique", "no:periodic-locks"),
        **settings,
    )
    broker = MemoryBroker()
    app.use_broker(cast("Broker", broker))  # the engine tests reach the facets it has
    return app, broker


def job_runner(app: cogworker.App) -> tuple[JobRunner, StatsBuffer, Settler, MemoryFetcher]:
    outages = OutageLog()
    stats = StatsBuffer(app.broker.stats, outages, interval=0)
    fetcher = app.hooks.make_fetcher(app, app.broker)
    assert isinstance(fetcher, MemoryFetcher)
    return JobRunner(app, outages, stats, AsyncRunner()), stats, Settler(app, fetcher), fetcher
