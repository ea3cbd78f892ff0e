"""``RedisBroker``: the broker contract (:mod:`cogworker.core.broker`) on Redis.

One client, one key schema and one script runner, shared by the facets, one module each:
:mod:`~cogworker.redis.queue_store` (``queues``), :mod:`~cogworker.redis.held` (``held``),
:mod:`~cogworker.redis.job_sets` (``sets``), :mod:`~cogworker.redis.process_registry`
(``processes``), :mod:`~cogworker.redis.lock_store` (``locks``),
:mod:`~cogworker.redis.periodic_store` (``periodic``) and
:mod:`~cogworker.redis.stats_store` (``stats``); :mod:`~cogworker.redis.locate` finds jobs.
Every Redis call goes through :func:`cogworker.redis.errors.translate_errors`, so callers
only ever see ``BrokerUnavailableError`` (retry later) or ``BrokerError`` (something else
is wrong), with the redis-py exception as ``__cause__``. ``client``, ``keys`` and
``scripts`` are the documented surface for Redis-specific plugins
(:class:`~cogworker.redis.access.RedisAccess`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import redis

from cogworker.core.broker import LOCATE_WINDOW, Extension, LocatePage
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.settings import DEFAULT_PUSH_BUSY_WAIT
from cogworker.redis.connection import redact_url
from cogworker.redis.dead_caps import DEFAULT_DEAD_MAX_JOBS, DEFAULT_DEAD_TIMEOUT
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.queue_store import RedisQueueStore
from cogworker.redis.scripts import Scripts
from cogworker.redis.server_version import UNKNOWN_VERSION, ServerVersion

if TYPE_CHECKING:
    from cogworker.redis.held import RedisHeldJobStore
    from cogworker.redis.job_sets import RedisJobSets
    from cogworker.redis.locate import Locator
    from cogworker.redis.lock_store import RedisLockStore
    from cogworker.redis.periodic_store import RedisPeriodicStore
    from cogworker.redis.process_registry import RedisProcessRegistry
    from cogworker.redis.stats_store import RedisStatsStore

T = TypeVar("T")

__all__ = ["DEFAULT_DEAD_MAX_JOBS", "DEFAULT_DEAD_TIMEOUT", "UNKNOWN_VERSION", "RedisBroker"]


def flat_info(info: dict[str, Any]) -> dict[str, str | int | float]:
    """INFO as one flat mapping: nested sections (``db0``) become ``k=v,k=v`` strings."""
    flat: dict[str, str | int | float] = {}
    for name, value in info.items():
        if isinstance(value, dict):
            flat[name] = ",".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, (str, int, float)):
            flat[name] = value
        else:
            flat[name] = str(value)
    return flat


class RedisBroker:
    """:class:`cogworker.core.broker.Broker` (and
    :class:`~cogworker.redis.access.RedisAccess`) on one Redis client.

    The dead set is capped on every write to it: at most ``dead_max_jobs`` entries, none
    older than ``dead_timeout`` seconds. A push busy-waits up to ``push_busy_wait`` seconds
    for its reply (:mod:`cogworker.redis.line_socket`). ``url`` is what :meth:`describe`
    shows (without credentials); without it, the client's connection settings are shown.

    Only ``queues`` is built with the broker: the other facets, and their modules, are
    built on first use, so a process that only pushes never imports them.
    """

    name = "redis"

    def __init__(
        self,
        client: redis.Redis,
        keys: KeySchema,
        *,
        dead_max_jobs: int = DEFAULT_DEAD_MAX_JOBS,
        dead_timeout: float = DEFAULT_DEAD_TIMEOUT,
        push_busy_wait: float = DEFAULT_PUSH_BUSY_WAIT,
        url: str | None = None,
    ) -> None:
        self._client = client
        self._keys = keys
        self._scripts = Scripts(client)
        self._url = url
        self._version = ServerVersion(client)
        self._dead_limits = (dead_max_jobs, dead_timeout)
        self._queues = RedisQueueStore(client, keys, self._scripts,
                                       push_busy_wait=push_busy_wait)
        self._facets: dict[str, Any] = {}
        self._facets_lock = threading.Lock()

    def _facet(self, name: str, build: Callable[[], T]) -> T:
        """The facet ``name``, built once (by the first thread to ask) with ``build``."""
        facet = self._facets.get(name)
        if facet is None:
            with self._facets_lock:
                facet = self._facets.get(name)
                if facet is None:
                    facet = self._facets[name] = build()
        return facet

    # RedisAccess -----------------------------------------------------------------------
    @property
    def client(self) -> redis.Redis:
        return self._client

    @property
    def keys(self) -> KeySchema:
        return self._keys

    @property
    def scripts(self) -> Scripts:
        return self._scripts

    # facets ----------------------------------------------------------------------------
    @property
    def queues(self) -> RedisQueueStore:
        return self._queues

    @property
    def held(self) -> RedisHeldJobStore:
        return self._facet("held", self._build_held)

    def _build_held(self) -> RedisHeldJobStore:
        from cogworker.redis.held import RedisHeldJobStore

        return RedisHeldJobStore(self._client, self._keys, self._scripts, self._ask_version)

    @property
    def sets(self) -> RedisJobSets:
        return self._facet("sets", self._build_sets)

    def _build_sets(self) -> RedisJobSets:
        from cogworker.redis.job_sets import RedisJobSets

        dead_max_jobs, dead_timeout = self._dead_limits
        return RedisJobSets(self._client, self._keys, self._scripts,
                            dead_max_jobs=dead_max_jobs, dead_timeout=dead_timeout)

    @property
    def processes(self) -> RedisProcessRegistry:
        return self._facet("processes", self._build_processes)

    def _build_processes(self) -> RedisProcessRegistry:
        from cogworker.redis.process_registry import RedisProcessRegistry

        return RedisProcessRegistry(self._client, self._keys, self._scripts)

    @property
    def locks(self) -> RedisLockStore:
        return self._facet("locks", self._build_locks)

    def _build_locks(self) -> RedisLockStore:
        from cogworker.redis.lock_store import RedisLockStore

        return RedisLockStore(self._client, self._keys, self._scripts)

    @property
    def periodic(self) -> RedisPeriodicStore:
        return self._facet("periodic", self._build_periodic)

    def _build_periodic(self) -> RedisPeriodicStore:
        from cogworker.redis.periodic_store import RedisPeriodicStore

        return RedisPeriodicStore(self._client, self._keys, self._scripts)

    @property
    def stats(self) -> RedisStatsStore:
        return self._facet("stats", self._build_stats)

    def _build_stats(self) -> RedisStatsStore:
        from cogworker.redis.stats_store import RedisStatsStore

        return RedisStatsStore(self._client, self._keys)

    def _locator(self) -> Locator:
        return self._facet("locator", self._build_locator)

    def _build_locator(self) -> Locator:
        from cogworker.redis.locate import Locator

        return Locator(self._client, self._keys, self._scripts)

    def _extensions(self) -> dict[Extension[Any], object]:
        return self._facet("extensions", self._build_extensions)

    def _build_extensions(self) -> dict[Extension[Any], object]:
        # imported here: the optional facets' modules stay off the push path
        from cogworker.redis.extensions import build_extensions

        return build_extensions(self._client, self._keys, self._scripts)

    # the server ------------------------------------------------------------------------
    def server_time(self) -> float:
        with translate_errors():
            seconds, micros = self._client.time()
        return int(seconds) + int(micros) / 1_000_000

    def server_version(self) -> tuple[int, ...]:
        """``redis_version`` from INFO, e.g. (7, 2, 4); (99,) when it cannot be read."""
        return self._version.read()

    def _ask_version(self) -> tuple[int, ...]:
        """:meth:`server_version`, looked up at each call (a test may replace it)."""
        return self.server_version()

    def server_info(self) -> dict[str, str | int | float]:
        """The whole INFO reply as one flat mapping (``redis_version``, ``used_memory``...)."""
        with translate_errors():
            return flat_info(self._client.info())

    def describe(self) -> str:
        """The URL without credentials, or the client's host, port (or socket) and db."""
        if self._url:
            return redact_url(self._url)
        options = self._client.connection_pool.connection_kwargs
        if options.get("path"):
            return f"unix://{options['path']}?db={options.get('db', 0)}"
        host, port = options.get("host", "localhost"), options.get("port", 6379)
        return f"redis://{host}:{port}/{options.get('db', 0)}"

    def ping(self) -> bool:
        """True when Redis answers PING; False when it cannot be reached."""
        try:
            with translate_errors():
                return bool(self._client.ping())
        except BrokerUnavailableError:
            return False

    def locate(self, jids: Iterable[str], cursor: str | None = None, *,
               window: int = LOCATE_WINDOW) -> LocatePage:
        return self._locator().locate(jids, cursor, window)

    def extension(self, key: Extension[T]) -> T | None:
        """The optional facet ``key`` names (:mod:`cogworker.redis.extensions`), or None."""
        return self._extensions().get(key)  # type: ignore[return-value]  # keyed with its type

    def close(self) -> None:
        """Disconnect every pooled and push connection (they reopen if used again)."""
        self._queues.close()
        self._scripts.lanes.close()
        self._client.connection_pool.disconnect()
