"""Where the processor threads get their next job: the fetch gate and the ready jobs.

One thread fetches at a time, for itself and for the other idle threads (one job each, and
the ready depth on top when the fetcher holds jobs), so an idle process sends one blocking
fetch at a time instead of one per thread; every other thread waits for the gate or takes
a ready job. When the queue is deep (the last fetch came back full), a thread that takes a
ready job and leaves fewer than the low water mark (:class:`~cogworker.worker.prefetch.
PrefetchDepth`) wakes the fetch-ahead thread and runs its job; that thread tops the ready
jobs up without waiting for the store, so no processor thread waits a round trip for its
next job. Jobs are fetched ahead only from a fetcher that holds them (``reliable``): a job
that waits in this process must come back if the process dies.

A fetch that failed because the broker was unreachable may still have run (a reply lost on
the way back, a command Redis ran when it woke from a freeze): its jobs are then held by
this process, unknown to every thread. After such a failure, the first fetch that works
again asks the poller for :data:`STRAY_CHECKS` quick reconciles, one per poll, so those
jobs go back to their queue within a few polls instead of after two orphan checks.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from cogworker.core.broker import Fetcher, UnitOfWork
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.outage import OutageLog
from cogworker.worker.prefetch import PrefetchDepth
from cogworker.worker.stats_buffer import StatsBuffer

if TYPE_CHECKING:
    from cogworker.app import App

FETCH_TIMEOUT: Final = 2.0
ERROR_BACKOFF: Final = 1.0
MAX_FETCH: Final = 32
"""The most jobs one fetch asks for (idle threads plus the ready depth)."""
STRAY_CHECKS: Final = 3
"""Quick reconciles after a fetch failed on an unreachable broker: a stray is requeued when
two consecutive ones see it, and the third covers a fetch the store ran a little later."""


class Intake:
    """The next job for a processor thread; the jobs fetched and not yet started."""

    def __init__(self, app: App, fetcher: Fetcher, outages: OutageLog, stats: StatsBuffer,
                 may_fetch: Callable[[], bool], stopping: threading.Event) -> None:
        self.app = app
        self.fetcher = fetcher
        self.outages = outages
        self.stats = stats
        self._may_fetch = may_fetch
        self._stopping = stopping
        self._gate = threading.Lock()
        self._lock = threading.Lock()
        self._ready: collections.deque[UnitOfWork] = collections.deque()
        self.depth = PrefetchDepth(app.settings.concurrency)
        self._idle = 0
        self._deep = False  # the last fetch came back full: the queue has more
        self.taken = 0  # jobs fetched so far
        self._fetch_uncertain = False  # a fetch failed in a way that may have moved jobs
        self._stray_checks_due = 0
        self._ahead_asked = threading.Event()
        self._closed = False
        self._ahead_thread = threading.Thread(target=self._fetch_ahead_loop, daemon=True,
                                              name="cogworker-fetch-ahead")

    def start(self) -> None:
        self._ahead_thread.start()

    def stop(self, timeout: float = FETCH_TIMEOUT + 1) -> None:
        """End the fetch-ahead thread (its fetch waits for nothing, so it ends soon)."""
        self._closed = True
        self._ahead_asked.set()
        if self._ahead_thread.is_alive():
            self._ahead_thread.join(timeout)

    # the next job -----------------------------------------------------------------------------
    def next_work(self) -> UnitOfWork | None:
        """A ready job (fetching ahead if the ready ones run low), or one fetched now,
        waiting up to :data:`FETCH_TIMEOUT`; None when there was none."""
        with self._lock:
            if self._ready:
                work = self._ready.popleft()
                ahead = self._should_fetch_ahead()
            else:
                work, ahead = None, False
                self._idle += 1
        if work is not None:
            if ahead:
                self._ahead_asked.set()
            return work
        try:
            works = self._fetch_for_idle()
        finally:
            with self._lock:
                self._idle -= 1
        if not works:
            return None
        with self._lock:
            self._ready.extend(works[1:])
        return works[0]

    def _should_fetch_ahead(self) -> bool:
        """(Under the lock.) Deep queue, nobody idle (an idle thread fetches anyway), and
        fewer ready jobs than the threads finish during a round trip."""
        return (self._deep and self._idle == 0 and self.fetcher.reliable
                and len(self._ready) < self.depth.low_water())

    def _fetch_for_idle(self) -> list[UnitOfWork]:
        """When the last fetch came back full, jobs were there a moment ago: take them
        first with a fetch that may not wait, which also times the round trip the prefetch
        depth is made of (fetches ahead alone never started measuring: they run only while
        no thread is idle, and until the depth is known the threads run dry and are idle).
        Otherwise, or when that fetch finds nothing, wait for a job."""
        with self._gate:
            with self._lock:
                if self._ready:
                    return [self._ready.popleft()]
                extra = self.depth.refill_to() if self.fetcher.reliable else 0
                wanted = min(self._idle + extra, MAX_FETCH)
                deep = self._deep and self.fetcher.reliable  # basic pops one: nothing to gain
            if not self._may_fetch():
                return []
            works = self._fetch(wanted, 0.0) if deep else []
            if works is None:  # failed (reported, backed off): the thread asks again
                return []
            return works or self._fetch(wanted, FETCH_TIMEOUT) or []

    def _fetch_ahead_loop(self) -> None:
        while True:
            self._ahead_asked.wait()
            self._ahead_asked.clear()
            if self._closed:
                return
            with self._gate:  # an idle thread's fetch first: it fetches for everyone
                self._fetch_ahead()

    def _fetch_ahead(self) -> None:
        """(Holding the gate.) Top the ready jobs up without waiting for the store."""
        with self._lock:
            wanted = self.depth.refill_to() - len(self._ready)
        if wanted <= 0 or not self._may_fetch() or not self.fetcher.reliable:
            return
        works = self._fetch(wanted, 0.0)
        if works:
            with self._lock:
                self._ready.extend(works)

    def _fetch(self, wanted: int, timeout: float) -> list[UnitOfWork] | None:
        """One fetch, None when it failed: the failure is reported and backed off. A fetch
        that may not wait (``timeout`` 0) and brought jobs is a round trip: the depth's
        measure."""
        started = time.monotonic()
        try:
            works = self.fetcher.fetch(self.app.settings.queues, timeout, wanted)
        except Exception as exc:
            self.outages.report("fetch", exc)
            if isinstance(exc, BrokerUnavailableError):
                self._fetch_uncertain = True
            self._stopping.wait(ERROR_BACKOFF)
            return None
        self.outages.recovered("fetch")
        with self._lock:
            self.taken += len(works)
            self._deep = len(works) >= wanted
            if works and timeout <= 0:
                self.depth.fetched(time.monotonic() - started)
            if self._fetch_uncertain:
                self._fetch_uncertain = False
                self._stray_checks_due = STRAY_CHECKS
        if not works and timeout > 0:
            self.stats.flush()  # idle: publish the last counts now rather than at the next job
        return works

    # what the Manager asks -----------------------------------------------------------------------
    def job_ran(self, seconds: float) -> None:
        with self._lock:
            self.depth.job_ran(seconds)

    def take_ready(self) -> list[UnitOfWork]:
        """Remove and return every ready job (to give back: a stop, or quiet)."""
        with self._lock:
            works = list(self._ready)
            self._ready.clear()
        return works

    def ready_raws(self) -> set[str]:
        with self._lock:
            return {work.raw for work in self._ready}

    def take_stray_check(self) -> bool:
        """Whether the poller should reconcile now, out of turn (after a fetch that may
        have moved jobs nobody knows of); counts the check as taken."""
        with self._lock:
            if self._stray_checks_due <= 0:
                return False
            self._stray_checks_due -= 1
            return True
