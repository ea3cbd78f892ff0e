"""``MemoryBroker``: the whole broker contract in one process's memory."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from cogworker.core.broker import LOCATE_WINDOW, Extension, LocatePage
from cogworker.core.settings import Settings
from cogworker.testing.memory_broker.extensions import build_extensions
from cogworker.testing.memory_broker.held import MemoryHeldJobs
from cogworker.testing.memory_broker.locate import Locator
from cogworker.testing.memory_broker.locks import MemoryLocks
from cogworker.testing.memory_broker.periodic import MemoryPeriodic
from cogworker.testing.memory_broker.processes import MemoryProcesses
from cogworker.testing.memory_broker.queues import MemoryQueues
from cogworker.testing.memory_broker.sets import MemoryJobSets
from cogworker.testing.memory_broker.state import MemoryState
from cogworker.testing.memory_broker.stats import MemoryStats

T = TypeVar("T")

_DEFAULTS = Settings()


class MemoryBroker:
    """:class:`cogworker.core.broker.Broker` in plain Python structures under one lock.

    For tests and development: every promise of the contract's docstrings is kept within
    this process (ordering, write-first, False when not held, owner checks, TTLs, orphan
    counters, dead caps, liveness, bounded reads with cursors), and each step is atomic
    because it runs under the one lock. It proves nothing about atomicity *across
    processes*: a Lua script's behaviour under concurrent processes, a lost reply or a
    full server is tested against a real Redis.

    ``clock`` is the store's clock (:meth:`server_time`): every TTL, liveness check and
    dead-set age reads it, so a test clock moves them all (nothing expires while it is
    frozen). Blocking pops and claims wait real seconds. ``dead_max_jobs`` and
    ``dead_timeout`` cap the dead set, as the settings of the same names. ``name`` is what
    :meth:`describe` shows after ``memory://`` (a broker shared under that name, see
    :func:`cogworker.testing.memory_broker.plugin.broker_for_url`).
    """

    def __init__(self, clock: Callable[[], float] = time.time, *,
                 dead_max_jobs: int = _DEFAULTS.dead_max_jobs,
                 dead_timeout: float = _DEFAULTS.dead_timeout, name: str = "") -> None:
        if dead_max_jobs < 1 or not dead_timeout > 0:
            raise ValueError(f"the dead set's caps must be dead_max_jobs >= 1 and "
                             f"dead_timeout > 0, not {dead_max_jobs} and {dead_timeout}")
        self.state = MemoryState(clock, dead_max_jobs, dead_timeout)
        self._label = name
        self._queues = MemoryQueues(self.state)
        self._held = MemoryHeldJobs(self.state)
        self._sets = MemoryJobSets(self.state)
        self._processes = MemoryProcesses(self.state)
        self._locks = MemoryLocks(self.state)
        self._periodic = MemoryPeriodic(self.state)
        self._stats = MemoryStats(self.state)
        self._locator = Locator(self.state)
        self._extensions = build_extensions(self.state)

    @property
    def name(self) -> str:
        return "memory"

    @property
    def queues(self) -> MemoryQueues:
        return self._queues

    @property
    def held(self) -> MemoryHeldJobs:
        return self._held

    @property
    def sets(self) -> MemoryJobSets:
        return self._sets

    @property
    def processes(self) -> MemoryProcesses:
        return self._processes

    @property
    def locks(self) -> MemoryLocks:
        return self._locks

    @property
    def periodic(self) -> MemoryPeriodic:
        return self._periodic

    @property
    def stats(self) -> MemoryStats:
        return self._stats

    def server_time(self) -> float:
        return self.state.now()

    def server_version(self) -> tuple[int, ...] | None:
        return None

    def server_info(self) -> dict[str, str | int | float]:
        """What the broker holds, in counts (there is no server to ask)."""
        state = self.state
        with state.lock:
            return {
                "broker": "memory",
                "queues": len(state.registered),
                "queued_jobs": sum(len(jobs) for jobs in state.queues.values()),
                "scheduled": len(state.sets["schedule"]),
                "retries": len(state.sets["retry"]),
                "dead": len(state.sets["dead"]),
                "held_jobs": sum(len(raws) for raws in state.held.values()),
                "processes": len(state.processes),
                "locks": len(state.locks),
            }

    def describe(self) -> str:
        return f"memory://{self._label}"

    def ping(self) -> bool:
        return True

    def locate(self, jids: Iterable[str], cursor: str | None = None, *,
               window: int = LOCATE_WINDOW) -> LocatePage:
        return self._locator.locate(jids, cursor, window)

    def extension(self, key: Extension[T]) -> T | None:
        """The optional facet ``key`` names (:mod:`~cogworker.testing.memory_broker.extensions`),
        or None."""
        return self._extensions.get(key)  # type: ignore[return-value]  # keyed with its type

    def close(self) -> None:
        """Nothing to release: the state stays, and the broker works on afterwards."""

    def clear_locks(self) -> None:
        """Forget every lock, whoever holds it (the test modes drop the locks they took
        when the app goes back to disabled, and in ``app.testing.clear_all()``)."""
        with self.state.lock:
            self.state.locks.clear()

    def __repr__(self) -> str:
        return f"<MemoryBroker {self.describe()}>"
