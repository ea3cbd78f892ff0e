"""The optional facets the memory broker provides, by their :class:`Extension` key.

Each store keeps its own structures and takes the broker's one lock (``state.lock``) for
every step, and reads the broker's clock (``state.now()``), so it is atomic and moves with
a test clock like the built-in facets.
"""

from __future__ import annotations

from typing import Any

from cogworker.core.broker import (
    ATTEMPTS,
    BATCHES,
    CANCELLATIONS,
    HISTORY,
    LIMITS,
    METRICS,
    RESULTS,
    STATUS,
    Extension,
)
from cogworker.testing.memory_broker.attempts import MemoryAttemptStore
from cogworker.testing.memory_broker.batches import MemoryBatchStore
from cogworker.testing.memory_broker.cancellation import MemoryCancellationStore
from cogworker.testing.memory_broker.history import MemoryHistory
from cogworker.testing.memory_broker.limits import MemoryLimitStore
from cogworker.testing.memory_broker.metrics import MemoryMetrics
from cogworker.testing.memory_broker.results import MemoryResultStore
from cogworker.testing.memory_broker.state import MemoryState
from cogworker.testing.memory_broker.status import MemoryStatusStore


def build_extensions(state: MemoryState) -> dict[Extension[Any], object]:
    """One store per optional facet this broker provides, keyed by the facet's key."""
    extensions: dict[Extension[Any], object] = {}
    extensions[STATUS] = MemoryStatusStore(state)
    extensions[ATTEMPTS] = MemoryAttemptStore(state)
    extensions[HISTORY] = MemoryHistory(state)
    extensions[METRICS] = MemoryMetrics(state)
    extensions[CANCELLATIONS] = MemoryCancellationStore(state)
    extensions[LIMITS] = MemoryLimitStore(state)
    extensions[RESULTS] = MemoryResultStore(state)
    extensions[BATCHES] = MemoryBatchStore(state)
    return extensions
