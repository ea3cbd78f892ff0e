"""A fetch-strategy plugin for engine unit tests: activate with
``fetch="cogworker.testing.memory_plugin:"`` on an app whose broker is a MemoryBroker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookimpl
from cogworker.testing.memory import MemoryBroker, MemoryFetcher

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.core.broker import LegacyBroker, LegacyFetcher


@hookimpl
def cogworker_make_fetcher(app: App, broker: LegacyBroker) -> LegacyFetcher | None:
    return MemoryFetcher(broker) if isinstance(broker, MemoryBroker) else None
