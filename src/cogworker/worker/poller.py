"""The scheduled poller: orphan checks, and moving due scheduled and retry jobs onto queues.

One daemon thread per process. Each poll runs two independent steps, each guarded on its
own (a failing step is reported and never skips the other):

1. the orphan check, when due: at the first poll, then every ``orphan_check_interval``
   seconds (see :mod:`cogworker.worker.orphan_check`). The next due time is set *before*
   the check runs, so a check that keeps failing runs once per interval, not once per
   poll; but when the connection was lost during a check, or the check was deferred
   because this process's own beats had not settled, the next one runs at the next poll,
   because the broker coming back is exactly when recovery matters. Otherwise, when
   the Manager asks for it (a fetch failed in a way that may have handed this process
   jobs), the poll reconciles this process's own held jobs out of turn;
2. graduation of due entries of ``schedule`` then ``retry`` (50 per set per poll),
   skipped while the process is quiet (``broker.sets.graduate``).

Polls are ``poll_interval`` apart, times a random factor in [0.8, 1.2], so processes started
together do not hit the broker in lockstep.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from cogworker.core.broker import Fetcher, GraduatedSetName
from cogworker.core.outage import OutageLog
from cogworker.worker.beat_continuity import BeatContinuity
from cogworker.worker.contracts import ManagerControls
from cogworker.worker.orphan_check import OrphanCheck
from cogworker.worker.threads import stop_thread

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger(__name__)

GRADUATION_BATCH: Final = 50
JITTER: Final = (0.8, 1.2)
GRADUATED_SETS: Final[tuple[GraduatedSetName, ...]] = ("schedule", "retry")
THREAD_JOIN_TIMEOUT: Final = 1.0


class Poller:
    """Runs :meth:`poll_once` every ``poll_interval`` (jittered) on a daemon thread."""

    def __init__(
        self,
        app: App,
        manager: ManagerControls,
        outages: OutageLog,
        fetcher: Fetcher,
        *,
        clock: Callable[[], float] = time.monotonic,
        continuity: BeatContinuity | None = None,
    ) -> None:
        self.app = app
        self._manager = manager
        self._outages = outages
        self._clock = clock
        self._orphan_check = OrphanCheck(app, manager, outages, fetcher, continuity)
        self._next_orphan_check: float | None = None  # None: due at the next poll
        self.orphan_checks_run = 0
        self._stopping = threading.Event()
        self._quiet_noted = False
        self._thread: threading.Thread | None = None
        self.ready_for_ticker = threading.Event()
        """Set after the first orphan check that really read the in-progress registry
        without losing the connection. The cron ticker waits for it, so after a long
        outage it cannot claim a slot before recovery re-took the interrupted run's lock."""

    def start(self) -> None:
        """Start the thread; the first poll runs at once."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="cogworker-poller", daemon=True)
        self._thread.start()

    def stop(self, join_timeout: float = THREAD_JOIN_TIMEOUT) -> None:
        """Ask the thread to end; wait up to ``join_timeout`` s (it holds nothing)."""
        stop_thread(self._stopping, self._thread, join_timeout)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.poll_once()
            if self._stopping.wait(self._next_delay()):
                return

    def _next_delay(self) -> float:
        return self.app.settings.poll_interval * random.uniform(*JITTER)

    # one poll ------------------------------------------------------------------------------
    def poll_once(self) -> None:
        """One poll: the orphan check if due (else a reconcile the Manager asked for),
        then graduation unless quiet. Never raises."""
        if not self._check_orphans_if_due() and self._manager.take_stray_check():
            self._orphan_check.reconcile_now()
        if self._stopping.is_set():
            return
        if self._manager.is_quiet:
            if not self._quiet_noted:  # once per quiet spell, not once per poll
                logger.debug("quiet: scheduled and retry jobs are not moved to their queues")
                self._quiet_noted = True
            return
        self._quiet_noted = False
        self._graduate_due()

    def _check_orphans_if_due(self) -> bool:
        """Run the orphan check when it is due; whether it ran."""
        now = self._clock()
        if self._next_orphan_check is not None and now < self._next_orphan_check:
            return False
        self._next_orphan_check = now + self.app.settings.orphan_check_interval
        self.orphan_checks_run += 1
        try:
            outcome = self._orphan_check.run()
        except Exception:  # a bug in one pass must not end the poller
            logger.exception("orphan check failed; next try in %.0f s",
                             self.app.settings.orphan_check_interval)
            return True
        if outcome.connection_lost or outcome.deferred:
            self._next_orphan_check = None
        elif outcome.registry_read and not self.ready_for_ticker.is_set():
            self.ready_for_ticker.set()
        return True

    def _graduate_due(self) -> None:
        broker = self.app.broker
        for set_name in GRADUATED_SETS:
            site = f"graduate {set_name}"
            try:
                report = broker.sets.graduate(set_name, time.time(), GRADUATION_BATCH)
            except Exception as exc:
                self._outages.report(site, exc)
                continue
            self._outages.recovered(site)
            if report.moved:
                logger.debug("moved %d due job(s) from %s to their queues",
                             report.moved, set_name)
