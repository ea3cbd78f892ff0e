"""The ``reliable`` fetch strategy: every job waits on this process's in-progress list.

A fetch moves each job atomically from its queue onto ``inprogress:<identity>`` (LMOVE),
and the job leaves that list only when it is settled. If the process dies, orphan recovery
(:mod:`cogworker.redis.recovery`, run by every live process) puts the jobs back on their
queues. Needs Redis >= 6.2 (LMOVE); on an older server, or one that rejects LMOVE, the
fetcher switches itself to :class:`~cogworker.fetchers.basic.BasicFetcher` with a warning.
``docs/explanation/fetching.md`` explains the waiting design (BLMOVE for one queue, one Lua
round trip plus pub/sub wake-ups for several).

Two states of Redis do not stop it: a queue key of the wrong type is quarantined
(:mod:`cogworker.redis.quarantine`) and the fetch runs again at once; a full Redis
(``maxmemory`` with ``noeviction``) refuses BLMOVE, so an idle fetch waits for wake-ups
instead, while ``fetch.lua`` still moves jobs (see its header).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Literal, Protocol, cast

import redis.exceptions as rex

from cogworker.core.broker import SortedSetName, UnitOfWork
from cogworker.core.errors import BrokerError, BrokerUnavailableError, UnsupportedCommandError
from cogworker.core.markers import hookimpl
from cogworker.fetchers.basic import (
    DEFAULT_QUEUED_TTL,
    AppLike,
    BasicFetcher,
    as_redis_backend,
    blocking_seconds,
    queued_ttl,
)
from cogworker.fetchers.inprogress import PACKAGE, InProgressList
from cogworker.fetchers.wakeup import WakeupListener
from cogworker.fetchers.weighted import ALL_PAUSED_PAUSE, fetch_order
from cogworker.redis.errors import translate_errors
from cogworker.redis.quarantine import is_wrong_type, quarantine_wrong_types
from cogworker.redis.requeue import RedisBackend, text

logger = logging.getLogger(__name__)

MIN_VERSION = (6, 2)
FetchMode = Literal["reliable", "basic"]


class _Settler(Protocol):
    """The settling half of a fetcher (``InProgressList`` or ``BasicFetcher``)."""

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None: ...
    def give_back(self, work: UnitOfWork) -> bool: ...
    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool: ...
    def in_progress(self) -> list[str]: ...
    def park_unsettled(self, raw: str, record_json: str) -> bool: ...
    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int: ...


class ReliableFetcher:
    """Fetches onto an in-progress list; shared by all processor threads of a process.

    Fetches are serialized (one thread inside :meth:`fetch` at a time). The server is asked
    for its version on the first fetch (or :meth:`resolve_mode`), not at construction.
    """

    name = "reliable"

    def __init__(self, backend: RedisBackend, identity: str, *,
                 idle_max_interval: float = 1.0, queued_ttl: int = DEFAULT_QUEUED_TTL,
                 rng: random.Random | None = None) -> None:
        self._backend = backend
        self.identity = identity
        self.idle_max_interval = idle_max_interval
        self.queued_ttl = queued_ttl
        self.reliable = True
        self._rng = rng or random.Random()
        self._list = InProgressList(backend, identity, queued_ttl)
        self._wakeups = WakeupListener(backend)
        self._fetch_lock = threading.Lock()
        self._mode_lock = threading.Lock()
        self._resolved = False
        self._basic: BasicFetcher | None = None
        self._list_used = False
        """Set once a reliable fetch returned jobs: after a runtime fallback some of them
        may still be held on the in-progress list, and must be settled there."""
        self._closed = threading.Event()
        self._full_noted = False  # the "Redis is full" warning was logged (once per spell)

    # mode -------------------------------------------------------------------------------
    @property
    def mode(self) -> FetchMode:
        """``reliable``, or ``basic`` after falling back (also before :meth:`resolve_mode`
        has run, the mode is ``reliable``)."""
        return "basic" if self._basic is not None else "reliable"

    def resolve_mode(self) -> FetchMode:
        """Ask the server's version once. A connection error propagates and nothing is
        remembered (ask again later); any other error assumes a modern server."""
        with self._mode_lock:
            if not self._resolved:
                try:
                    version = self._backend.server_version()
                except BrokerUnavailableError:
                    raise
                except BrokerError as exc:
                    logger.debug("could not read the Redis version (%s); assuming >= 6.2", exc)
                    version = MIN_VERSION
                if version < MIN_VERSION:
                    self._switch_to_basic(f"Redis {'.'.join(map(str, version))} < 6.2 "
                                          "has no LMOVE")
                self._resolved = True
        return self.mode

    def _switch_to_basic(self, reason: str) -> BasicFetcher:
        """Use a basic delegate from now on, for every thread (caller holds the lock)."""
        if self._basic is None:
            logger.warning("reliable fetch isn't supported by this Redis (%s); falling back "
                           "to basic (a job is lost if its process dies mid-job)", reason)
            self._basic = BasicFetcher(self._backend, self.identity,
                                       queued_ttl=self.queued_ttl, rng=self._rng)
            self.reliable = False
            self._wakeups.close()
        return self._basic

    def _settler(self) -> _Settler:
        return self._basic if self._basic is not None else self._list

    # fetching ---------------------------------------------------------------------------
    def fetch(self, queues: Sequence[str], timeout: float, max_jobs: int = 1) -> list[UnitOfWork]:
        """Take up to ``max_jobs`` jobs, waiting up to ``timeout`` seconds for the first."""
        with self._fetch_lock:
            if self._closed.is_set():
                return []
            self.resolve_mode()
            basic = self._basic
            if basic is None:
                try:
                    works = self._fetch_guarded(queues, timeout, max(max_jobs, 1))
                except UnsupportedCommandError as exc:
                    with self._mode_lock:
                        basic = self._switch_to_basic(str(exc))
                else:
                    self._list_used = self._list_used or bool(works)
                    return works
            return basic.fetch(queues, timeout, max_jobs)

    def _fetch_guarded(self, queues: Sequence[str], timeout: float,
                       max_jobs: int) -> list[UnitOfWork]:
        """A reliable fetch; on ``WRONGTYPE``, quarantine the keys of the wrong type and
        fetch again at once (the error propagates when no key was wrong)."""
        try:
            return self._fetch_reliably(queues, timeout, max_jobs)
        except BrokerError as exc:
            keys = self._backend.keys
            expected = {keys.paused_queues: "set", self._list.key: "list",
                        **{keys.queue(queue): "list" for queue in queues}}
            if not is_wrong_type(exc) or not quarantine_wrong_types(self._backend, expected):
                raise
        return self._fetch_reliably(queues, timeout, max_jobs)

    def _fetch_reliably(self, queues: Sequence[str], timeout: float,
                        max_jobs: int) -> list[UnitOfWork]:
        order = fetch_order(queues, self._rng)
        works, open_queues = self._take(order, max_jobs)
        if works:
            return works
        if not open_queues:
            self._closed.wait(min(timeout, ALL_PAUSED_PAUSE))
            return []
        if len(open_queues) == 1:
            return self._block_on(order, open_queues[0], timeout, max_jobs)
        return self._wait_for_wakeups(order, open_queues, timeout, max_jobs)

    def _block_on(self, order: Sequence[str], queue: str, timeout: float,
                  max_jobs: int) -> list[UnitOfWork]:
        """BLMOVE from the one open queue (a pause from now on applies at the next fetch).
        A full Redis refuses BLMOVE: the fetch then waits for wake-ups instead."""
        keys = self._backend.keys
        try:
            with translate_errors():
                # redis-py types the timeout as int; servers take fractions since 6.0
                raw = self._backend.client.blmove(
                    keys.queue(queue), self._list.key, cast(int, blocking_seconds(timeout)),
                    "RIGHT", "LEFT",
                )
        except BrokerError as exc:
            if not isinstance(exc.__cause__, rex.OutOfMemoryError):
                raise
            self._note_full(exc)
            return self._wait_for_wakeups(order, [queue], timeout, max_jobs)
        if self._full_noted:
            self._full_noted = False
            logger.info("Redis has room again: fetches block in BLMOVE again")
        if raw is None:
            return []
        return [UnitOfWork(queue, text(raw))]

    def _note_full(self, exc: BrokerError) -> None:
        if not self._full_noted:
            self._full_noted = True
            logger.warning("Redis is full (maxmemory reached, noeviction): it refuses BLMOVE "
                           "(%s); fetches wait for wake-ups and move jobs by script until "
                           "it has room, and enqueues fail meanwhile", exc)

    def _wait_for_wakeups(self, order: Sequence[str], open_queues: Sequence[str],
                          timeout: float, max_jobs: int) -> list[UnitOfWork]:
        deadline = time.monotonic() + timeout
        self._wakeups.watch(open_queues)
        while True:
            self._wakeups.clear()  # before looking: a push after the look still wakes us
            works, _ = self._take(order, max_jobs)
            remaining = deadline - time.monotonic()
            if works or remaining <= 0 or self._closed.is_set():
                return works
            self._wakeups.wait(min(remaining, self.idle_max_interval))

    def _take(self, order: Sequence[str], max_jobs: int) -> tuple[list[UnitOfWork], list[str]]:
        """One round trip: move up to ``max_jobs`` jobs, trying the queues of ``order``
        that are not paused, in that order. Returns the jobs and those open queues."""
        keys = self._backend.keys
        reply = self._backend.scripts.run(
            PACKAGE, "fetch",
            keys=[keys.paused_queues, *(keys.queue(q) for q in order), self._list.key],
            args=[max_jobs, *order],
        )
        count = int(reply[0])
        open_queues = [order[int(position) - 1] for position in reply[1:count + 1]]
        flat = reply[count + 1:]
        works = [UnitOfWork(keys.queue_name(text(flat[i])), text(flat[i + 1]))
                 for i in range(0, len(flat), 2)]
        return works, open_queues

    # settling (delegated to the in-progress list, or to basic after a fallback) ----------
    # A job fetched reliably before a runtime fallback is still held on the list: it is
    # settled there first (the list's operations are no-ops for jobs it does not hold).
    def _held_first(self, on_list: Callable[[], bool], on_basic: Callable[[], bool]) -> bool:
        if self._basic is None:
            return on_list()
        return (self._list_used and on_list()) or on_basic()

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        """Drop settled jobs (and their orphan counters) in one step; raises BrokerError."""
        basic = self._basic
        if basic is None or self._list_used:
            self._list.acknowledge(works)
        if basic is not None:
            basic.acknowledge(works)

    def give_back(self, work: UnitOfWork) -> bool:
        """Requeue a held job that did not start at the head of its queue; False if it is
        no longer held."""
        return self._held_first(lambda: self._list.give_back(work),
                                lambda: self._settler().give_back(work))

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        """File ``record`` in retry/dead and drop the held job atomically; False (and
        nothing written) if it is no longer held."""
        return self._held_first(
            lambda: self._list.interrupt(work, set_name, score, record),
            lambda: self._settler().interrupt(work, set_name, score, record))

    def in_progress(self) -> list[str]:
        """The raws on this process's in-progress list, most recently fetched first."""
        return self._settler().in_progress()

    def holds_listed_jobs(self) -> bool:
        """True while jobs sit on the in-progress list, also after a runtime fallback, so
        the heartbeat keeps stamping the last beat that protects them from recovery."""
        if self._basic is None:
            return self.reliable
        return self._list_used and bool(self._list.in_progress())

    def park_unsettled(self, raw: str, record_json: str) -> bool:
        """Hand an unfiled failure to the unsettled list and drop the held job; False if
        it is no longer held."""
        return self._held_first(lambda: self._list.park_unsettled(raw, record_json),
                                lambda: self._settler().park_unsettled(raw, record_json))

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        """Shutdown: drop ``finished``, keep ``keep``, requeue every other held job."""
        basic = self._basic
        if basic is None:
            return self._list.requeue_unfinished(finished, keep)
        held = self._list.in_progress() if self._list_used else []
        requeued = self._list.requeue_unfinished(finished, keep) if held else 0
        # basic requeues what its workers hash lists: not the jobs the list just handled
        return requeued + basic.requeue_unfinished(finished, [*keep, *held])

    def close(self) -> None:
        """Stop the wake-up thread and end waits early; idempotent."""
        self._closed.set()
        self._wakeups.close()
        if self._basic is not None:
            self._basic.close()


@hookimpl
def cogworker_make_fetcher(app: AppLike, broker: object) -> ReliableFetcher | None:
    """The reliable fetcher on a Redis broker; None for any other broker."""
    backend = as_redis_backend(broker)
    if backend is None:
        return None
    settings = app.settings
    return ReliableFetcher(backend, app.identity,
                           idle_max_interval=settings.fetch_idle_max_interval,
                           queued_ttl=queued_ttl(settings))
