"""A real worker inside the test process, run until there is nothing left to do.

:meth:`InProcessWorker.run_until_idle` starts a real :class:`~cogworker.worker.manager.Manager`
with the app's configured fetcher (basic or reliable, from the fetch-strategy hook) against
the app's broker, moves due scheduled and retry jobs onto their queues itself (as the
poller would, without waiting for its interval), and stops the Manager once the app's
queues are empty, nothing due is left in the schedule and retry sets, and no job is
running. Heartbeat, orphan checks and the cron ticker do not run.

The fetcher is wrapped only to count the jobs it handed out and to keep each blocking
fetch short (so stopping takes a fraction of a second): the fetch path itself is the real
one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from cogworker.core.broker import (
    Fetcher,
    GraduatedSetName,
    RecoveryOptions,
    RecoveryReport,
    SortedSetName,
    UnitOfWork,
)
from cogworker.core.errors import TestingError
from cogworker.core.outage import OutageLog
from cogworker.worker.manager import Manager

if TYPE_CHECKING:
    from cogworker.app import App

FETCH_SLICE: Final = 0.1  # seconds one blocking fetch may wait
LOOK_INTERVAL: Final = 0.02
GRADUATION_BATCH: Final = 100
GRADUATED: Final[tuple[GraduatedSetName, ...]] = ("schedule", "retry")


class CountingFetcher:
    """The app's fetcher, counting jobs handed out and not yet settled."""

    def __init__(self, inner: Fetcher) -> None:
        self.inner = inner
        self.name = inner.name
        self.reliable = inner.reliable
        self._lock = threading.Lock()
        self.held = 0
        self.settled = 0

    def fetch(self, queues: Sequence[str], timeout: float, max_jobs: int = 1) -> list[UnitOfWork]:
        works = self.inner.fetch(queues, min(timeout, FETCH_SLICE), max_jobs)
        with self._lock:
            self.held += len(works)
        return works

    def _settle(self, count: int, done: bool) -> None:
        with self._lock:
            self.held -= count
            if done:
                self.settled += count

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        try:
            self.inner.acknowledge(works)
        finally:
            self._settle(len(works), done=True)

    def give_back(self, work: UnitOfWork) -> bool:
        try:
            return self.inner.give_back(work)
        finally:
            self._settle(1, done=False)

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        try:
            return self.inner.interrupt(work, set_name, score, record)
        finally:
            self._settle(1, done=True)

    def park_unsettled(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                       record: str) -> bool:
        return self.inner.park_unsettled(work, set_name, score, record)

    def holds_jobs(self) -> bool:
        return self.inner.holds_jobs()

    def in_progress(self) -> list[str]:
        return self.inner.in_progress()

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        return self.inner.requeue_unfinished(finished, keep)

    def recover_orphans(self, own_identity: str, options: RecoveryOptions) -> RecoveryReport:
        return self.inner.recover_orphans(own_identity, options)

    def recover_process(self, identity: str, options: RecoveryOptions) -> RecoveryReport:
        return self.inner.recover_process(identity, options)

    def close(self) -> None:
        self.inner.close()


class InProcessWorker:
    """Runs the app's jobs from Redis in this process (see the module docstring)."""

    def __init__(self, app: App, *, stop_timeout: float = 5.0) -> None:
        self.app = app
        self.stop_timeout = stop_timeout

    def run_until_idle(self, timeout: float = 10.0) -> int:
        """Work until idle; returns how many jobs ran (done or failed).

        Raises :class:`~cogworker.core.errors.TestingError` when still busy after
        ``timeout`` seconds, saying what is left.
        """
        if self.app.testing.mode != "disabled":
            raise TestingError(
                f"the app is in {self.app.testing.mode} mode, so pushes never reach the broker: "
                "a real worker needs app.testing.disable() (don't combine cogworker_worker "
                "with cogworker_fake)"
            )
        deadline = time.monotonic() + timeout
        fetcher = CountingFetcher(self.app.hooks.make_fetcher(self.app, self.app.broker))
        try:
            while True:
                looked_idle = self._run_once(fetcher, deadline)
                # Stopping joined every thread: what is left now is really left.
                if self._leftover(fetcher) is None:
                    return fetcher.settled
                if not looked_idle:
                    raise TestingError(
                        f"the worker was still busy after {timeout} s: "
                        f"{self._leftover(fetcher)}; pass a longer timeout= or look for a "
                        "job that never ends or keeps enqueueing"
                    )
        finally:
            fetcher.close()

    def _run_once(self, fetcher: CountingFetcher, deadline: float) -> bool:
        """Start a Manager, wait until things look idle (True) or the deadline (False)."""
        manager = Manager(self.app, fetcher, OutageLog())
        manager.start()
        try:
            while time.monotonic() < deadline:
                self._graduate()
                if self._leftover(fetcher) is None:
                    return True
                time.sleep(LOOK_INTERVAL)
            return False
        finally:
            manager.stop(self.stop_timeout)

    def _graduate(self) -> None:
        sets = self.app.broker.sets
        for set_name in GRADUATED:
            sets.graduate(set_name, time.time(), GRADUATION_BATCH)

    def _leftover(self, fetcher: CountingFetcher) -> str | None:
        """What keeps the worker busy, or None when idle."""
        broker = self.app.broker
        records = broker.queues.records(list(dict.fromkeys(self.app.settings.queues)))
        waiting = {record.name: record.size for record in records if not record.paused}
        now = time.time()
        due = {name: broker.sets.size(name, max_score=now) for name in GRADUATED}
        parts = [f"{count} job(s) on queue {q!r}" for q, count in waiting.items() if count]
        parts += [f"{count} due in {name}" for name, count in due.items() if count]
        if fetcher.held:
            parts.append(f"{fetcher.held} job(s) running")
        return ", ".join(parts) or None
