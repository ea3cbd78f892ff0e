"""An app on the in-memory broker with the built-in ``reliable`` fetcher, for engine unit
tests: a fetched job is held by the app's identity until it is settled, so what a
settlement did (acknowledged, filed, given back) shows in the broker's held jobs."""

from __future__ import annotations

from typing import Any

import cogworker
from cogworker.core.broker import SetEntry, SortedSetName, UnitOfWork
from cogworker.core.outage import OutageLog
from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.testing.memory_broker import MemoryBroker
from cogworker.worker.event_loop import EventLoopThread
from cogworker.worker.executor import JobRunner
from cogworker.worker.settlement import Settler
from cogworker.worker.stats_buffer import StatsBuffer

UNREACHABLE = "redis://127.0.0.1:1/0"
"""The app's Redis URL: nothing listens there, so a stray Redis call fails loudly."""


def memory_app(**settings: Any) -> tuple[cogworker.App, MemoryBroker]:
    app = cogworker.App(
        redis_url=UNREACHABLE,
        fetch="reliable",
        plugins=("no:unique", "no:periodic-locks"),
        **settings,
    )
    broker = MemoryBroker()
    app.use_broker(broker)
    return app, broker


def job_runner(app: cogworker.App) -> tuple[JobRunner, StatsBuffer, Settler, ReliableFetcher]:
    outages = OutageLog()
    stats = StatsBuffer(app.broker.stats, outages, interval=0)
    fetcher = app.hooks.make_fetcher(app, app.broker)
    assert isinstance(fetcher, ReliableFetcher)
    return JobRunner(app, outages, stats, EventLoopThread()), stats, Settler(app, fetcher), fetcher


def fetch_one(fetcher: ReliableFetcher, queue: str = "default") -> UnitOfWork:
    """The next job of ``queue``, now held by the fetcher's process."""
    (work,) = fetcher.fetch([queue], timeout=1.0)
    return work


def entries(broker: MemoryBroker, set_name: SortedSetName) -> list[SetEntry]:
    """Every entry of ``set_name``, lowest score first."""
    return broker.sets.page(set_name, 0, broker.sets.size(set_name), newest_first=False)
