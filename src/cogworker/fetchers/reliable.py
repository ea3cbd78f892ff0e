"""The ``reliable`` fetch strategy: every job is held by this process until it is settled.

A fetch moves each job atomically from its queue onto this process's held jobs
(``broker.held.claim``; on Redis the list ``inprogress:<identity>``), and the job leaves
them only when it is settled. If the process dies, orphan recovery (run by every live
process, :meth:`ReliableFetcher.recover_orphans`) puts the jobs back on their queues. When
the broker cannot hold jobs (``broker.held.supported()``: Redis before 6.2 has no LMOVE) or
a claim says so at run time, the fetcher switches itself to
:class:`~cogworker.fetchers.basic.BasicFetcher` with a warning.
``docs/explanation/fetching.md`` explains the waiting design (a blocking claim for one
queue, one batch claim plus wake-ups for several).

A full store (Redis: ``maxmemory`` with ``noeviction``) refuses the blocking claim
(``BrokerFullError``), so an idle fetch waits for wake-ups instead, while batch claims
still move jobs.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from cogworker.core.broker import (
    Broker,
    RecoveryOptions,
    RecoveryReport,
    Relock,
    SortedSetName,
    UnitOfWork,
    WakeupListener,
)
from cogworker.core.errors import BrokerFullError, UnsupportedCommandError
from cogworker.core.markers import hookimpl
from cogworker.core.plugin_host import PluginHost, PluginHostBase
from cogworker.core.plugin_options import AliasedOption, read_plugin_options
from cogworker.fetchers.weighted import ALL_PAUSED_PAUSE, fetch_order

if TYPE_CHECKING:
    from cogworker.fetchers.basic import BasicFetcher

PLUGIN_NAME = "reliable"
OPTIONS = (AliasedOption("idle_max_interval", alias="fetch_idle_max_interval"),)
"""``idle_max_interval``: the longest wait, in seconds, between looks at idle queues."""

logger = logging.getLogger(__name__)

FetchMode = Literal["reliable", "basic"]


class ReliableFetcher:
    """Fetches onto this process's held jobs; shared by all processor threads.

    Fetches are serialized (one thread inside :meth:`fetch` at a time). The broker is asked
    whether it can hold jobs on the first fetch (or :meth:`resolve_mode`), not at
    construction.
    """

    name = "reliable"

    def __init__(self, broker: Broker, identity: str, *, relock: Relock | None = None,
                 idle_max_interval: float = 1.0, rng: random.Random | None = None,
                 strict: bool = False) -> None:
        self._broker = broker
        self._held = broker.held
        self._strict = strict
        self.identity = identity
        self.relock = relock
        self.idle_max_interval = idle_max_interval
        self.reliable = True
        self._rng = rng or random.Random()
        self._wakeups = WakeupListener(broker.queues)
        self._fetch_lock = threading.Lock()
        self._mode_lock = threading.Lock()
        self._resolved = False
        self._basic: BasicFetcher | None = None
        self._held_used = False
        """Set once a reliable fetch returned jobs: after a runtime fallback some of them
        may still be held, and must be settled there."""
        self._closed = threading.Event()
        self._full_noted = False  # the "store is full" warning was logged (once per spell)

    # mode -------------------------------------------------------------------------------
    @property
    def mode(self) -> FetchMode:
        """``reliable``, or ``basic`` after falling back (also before :meth:`resolve_mode`
        has run, the mode is ``reliable``)."""
        return "basic" if self._basic is not None else "reliable"

    def resolve_mode(self) -> FetchMode:
        """Ask the broker once whether it can hold jobs. Unavailability propagates and
        nothing is remembered (ask again later)."""
        with self._mode_lock:
            if not self._resolved:
                reason = self._held.supported()
                if reason is not None:
                    self._switch_to_basic(reason)
                self._resolved = True
        return self.mode

    def _switch_to_basic(self, reason: str) -> BasicFetcher:
        """Use a basic delegate from now on, for every thread (caller holds the lock)."""
        if self._basic is None:
            from cogworker.fetchers.basic import BasicFetcher  # only ever on a fall-back

            logger.warning("reliable fetch isn't supported by this broker (%s); falling back "
                           "to basic (a job is lost if its process dies mid-job)", reason)
            self._basic = BasicFetcher(self._broker, self.identity, relock=self.relock,
                                       rng=self._rng, strict=self._strict)
            self.reliable = False
            self._wakeups.close()
        return self._basic

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
                    works = self._fetch_reliably(queues, timeout, max(max_jobs, 1))
                except UnsupportedCommandError as exc:
                    with self._mode_lock:
                        basic = self._switch_to_basic(str(exc))
                else:
                    self._held_used = self._held_used or bool(works)
                    return works
            return basic.fetch(queues, timeout, max_jobs)

    def _fetch_reliably(self, queues: Sequence[str], timeout: float,
                        max_jobs: int) -> list[UnitOfWork]:
        order = fetch_order(queues, self._rng, self._strict)
        batch = self._held.claim(self.identity, order, max_jobs)
        if batch.works or timeout <= 0:  # 0: take what is there, wait for nothing
            return list(batch.works)
        if not batch.open_queues:
            self._closed.wait(min(timeout, ALL_PAUSED_PAUSE))
            return []
        if len(batch.open_queues) == 1:
            return self._block_on(order, batch.open_queues[0], timeout, max_jobs)
        return self._wait_for_wakeups(order, batch.open_queues, timeout, max_jobs)

    def _block_on(self, order: Sequence[str], queue: str, timeout: float,
                  max_jobs: int) -> list[UnitOfWork]:
        """A blocking claim on the one open queue (a pause from now on applies at the next
        fetch). A full store refuses it: the fetch then waits for wake-ups instead."""
        try:
            work = self._held.claim_blocking(self.identity, queue, max(timeout, 0.01))
        except BrokerFullError as exc:
            self._note_full(exc)
            return self._wait_for_wakeups(order, [queue], timeout, max_jobs)
        if self._full_noted:
            self._full_noted = False
            logger.info("the broker has room again: fetches block on one queue again")
        return [] if work is None else [work]

    def _note_full(self, exc: BrokerFullError) -> None:
        if not self._full_noted:
            self._full_noted = True
            logger.warning("the broker is full (Redis: maxmemory reached, noeviction): it "
                           "refuses a blocking claim (%s); fetches wait for wake-ups and "
                           "claim by script until it has room, and enqueues fail meanwhile",
                           exc)

    def _wait_for_wakeups(self, order: Sequence[str], open_queues: Sequence[str],
                          timeout: float, max_jobs: int) -> list[UnitOfWork]:
        deadline = time.monotonic() + timeout
        self._wakeups.watch(open_queues)
        while True:
            self._wakeups.clear()  # before looking: a push after the look still wakes us
            works = list(self._held.claim(self.identity, order, max_jobs).works)
            remaining = deadline - time.monotonic()
            if works or remaining <= 0 or self._closed.is_set():
                return works
            self._wakeups.wait(min(remaining, self.idle_max_interval))

    # settling (held jobs, or the basic delegate after a fallback) ------------------------
    # A job fetched reliably before a runtime fallback is still held: it is settled there
    # first (the held steps are no-ops for jobs this process does not hold).
    def _held_first(self, held: Callable[[], bool], basic: Callable[[BasicFetcher], bool]) -> bool:
        delegate = self._basic
        if delegate is None:
            return held()
        return (self._held_used and held()) or basic(delegate)

    def holds_jobs(self) -> bool:
        """True while jobs are held, also after a runtime fallback, so the heartbeat keeps
        stamping the last beat that protects them from recovery."""
        if self._basic is None:
            return self.reliable
        return self._held_used and bool(self._held.held(self.identity))

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        """Release settled jobs (and their orphan counters) in one step."""
        basic = self._basic
        if basic is None or self._held_used:
            self._held.release(self.identity, works)
        if basic is not None:
            basic.acknowledge(works)

    def give_back(self, work: UnitOfWork) -> bool:
        """Requeue a held job that did not start at the head of its queue; False if it is
        no longer held."""
        return self._held_first(
            lambda: self._held.return_to_queue(self.identity, work, self.relock),
            lambda basic: basic.give_back(work))

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        """File ``record`` and drop the held job atomically; False (and nothing written)
        if it is no longer held."""
        return self._held_first(
            lambda: self._held.file(self.identity, work, set_name, score, record),
            lambda basic: basic.interrupt(work, set_name, score, record))

    def park_unsettled(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                       record: str) -> bool:
        """Hand an unfiled failure over and drop the held job; False if it is no longer
        held."""
        return self._held_first(
            lambda: self._held.park(self.identity, work, set_name, score, record),
            lambda basic: basic.park_unsettled(work, set_name, score, record))

    def in_progress(self) -> list[str]:
        """The raws this process holds, most recently fetched first."""
        if self._basic is not None and not self._held_used:
            return []
        return self._held.held(self.identity)

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        """Shutdown: drop ``finished``, keep ``keep``, requeue every other held job."""
        basic = self._basic
        if basic is None:
            return self._held.requeue_all(self.identity, finished, keep, self.relock)
        held = self._held.held(self.identity) if self._held_used else []
        requeued = (self._held.requeue_all(self.identity, finished, keep, self.relock)
                    if held else 0)
        # basic requeues what the running-work record lists: not the jobs just handled
        return requeued + basic.requeue_unfinished(finished, [*keep, *held])

    # recovery ---------------------------------------------------------------------------
    def recover_orphans(self, own_identity: str, options: RecoveryOptions) -> RecoveryReport:
        """``broker.held``'s recovery pass (see :func:`~cogworker.fetchers.recovery.
        recovery_pass`)."""
        from cogworker.fetchers.recovery import recovery_pass  # a worker's; not on a push

        return recovery_pass(self._broker, own_identity, options, self.relock)

    def recover_process(self, identity: str, options: RecoveryOptions) -> RecoveryReport:
        from cogworker.fetchers.recovery import process_recovery

        return process_recovery(self._broker, identity, options, self.relock)

    def close(self) -> None:
        """Stop the wake-up thread and end waits early; idempotent."""
        self._closed.set()
        self._wakeups.close()
        if self._basic is not None:
            self._basic.close()


def idle_max_interval(app: PluginHostBase) -> float:
    """``plugin_options.reliable.idle_max_interval`` (alias ``fetch_idle_max_interval``)."""
    options = read_plugin_options(app.settings, PLUGIN_NAME, OPTIONS)
    return float(options["idle_max_interval"])


@hookimpl
def cogworker_configure(app: PluginHostBase) -> None:
    """A bad ``plugin_options.reliable`` value fails at start-up."""
    idle_max_interval(app)


@hookimpl
def cogworker_make_fetcher(app: PluginHost, broker: Broker) -> ReliableFetcher:
    """The reliable fetcher on any broker (it falls back to basic where jobs cannot be
    held)."""
    from cogworker.fetchers.recovery import hook_relock  # a worker's; not on a push

    return ReliableFetcher(broker, app.identity, relock=hook_relock(app),
                           idle_max_interval=idle_max_interval(app),
                           strict=app.settings.strict_queue_order)
