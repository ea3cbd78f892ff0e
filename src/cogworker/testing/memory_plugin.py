"""A fetch-strategy plugin for engine unit tests: activate with
``fetch="cogworker.testing.memory_plugin:"`` on an app whose broker is a MemoryBroker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookimpl
from cogworker.testing.memory import MemoryBroker, MemoryFetcher

if TYPE_CHECKING:
    from cogworker.core.broker import Broker, Fetcher
    from cogworker.core.plugin_host import PluginHost


@hookimpl
def cogworker_make_fetcher(app: PluginHost, broker: Broker) -> Fetcher | None:
    memory: object = broker
    return MemoryFetcher(memory) if isinstance(memory, MemoryBroker) else None
