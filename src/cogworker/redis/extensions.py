"""The optional facets the Redis broker provides, by their :class:`Extension` key.

Each optional facet's Protocol and key live in :mod:`cogworker.core.broker` (one module
each); its Redis implementation is one module here, added to :func:`build_extensions`.
:meth:`RedisBroker.extension <cogworker.redis.broker.RedisBroker.extension>` answers from
the mapping this returns, so asking for a facet never contacts Redis.
"""

from __future__ import annotations

from typing import Any

import redis

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
from cogworker.redis.attempts_store import RedisAttemptStore
from cogworker.redis.batch_store import RedisBatchStore
from cogworker.redis.cancel_store import RedisCancellationStore
from cogworker.redis.history_store import RedisHistoryStore
from cogworker.redis.keys import KeySchema
from cogworker.redis.limits_store import RedisLimitStore
from cogworker.redis.metrics_store import RedisMetricsStore
from cogworker.redis.results_store import RedisResultStore
from cogworker.redis.scripts import Scripts
from cogworker.redis.status_store import RedisStatusStore


def build_extensions(client: redis.Redis, keys: KeySchema,
                     scripts: Scripts) -> dict[Extension[Any], object]:
    """One store per optional facet this broker provides, keyed by the facet's key."""
    extensions: dict[Extension[Any], object] = {}
    extensions[STATUS] = RedisStatusStore(client, keys)
    extensions[ATTEMPTS] = RedisAttemptStore(client, keys)
    extensions[HISTORY] = RedisHistoryStore(client, keys, scripts)
    extensions[METRICS] = RedisMetricsStore(client, keys, scripts)
    extensions[CANCELLATIONS] = RedisCancellationStore(client, keys, scripts)
    extensions[LIMITS] = RedisLimitStore(client, keys, scripts)
    extensions[RESULTS] = RedisResultStore(client, keys, scripts)
    extensions[BATCHES] = RedisBatchStore(client, keys, scripts)
    return extensions
