"""One orphan check of the poller: recover dead processes' jobs, then settle leftovers.

A pass runs, each step isolated (a failing step is reported and never skips the others):

1. :func:`~cogworker.redis.recovery.recover_orphans` for every dead process but this one
   (with the one-off keyspace SCAN, asked for until it succeeds, when this process itself
   fetches reliably), then the ``orphans_recovered`` hook per dead process;
2. file the repeat orphans into dead, then death hooks and lock releases for them;
3. file the failures stopping processes could not (``unsettled``), then death hooks and
   lock releases for those filed into dead;
4. reliable fetch only: reconcile this process's own in-progress list with the Manager.

The outcome tells the poller whether the registry was really read and whether the
connection was lost anywhere, which decides when the next check runs and when the cron
ticker may start.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from cogworker.core.broker import RecoveryReport
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.outage import OutageLog
from cogworker.redis.recovery import bury_repeat_orphans, file_unsettled, recover_orphans
from cogworker.worker.contracts import ManagerControls

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger(__name__)

RECOVER_SITE: Final = "orphan recovery"
REPEAT_ORPHANS_SITE: Final = "repeat orphans"
UNSETTLED_SITE: Final = "unsettled failures"
RECONCILE_SITE: Final = "reconcile"
REPEAT_ORPHAN_REASON: Final = "orphaned"
UNSETTLED_DEAD_REASON: Final = "dead"


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """What the poller needs to know about one pass."""

    registry_read: bool
    connection_lost: bool


class OrphanCheck:
    """Runs orphan-check passes for one process; remembers whether its SCAN is done."""

    def __init__(
        self,
        app: App,
        manager: ManagerControls,
        outages: OutageLog,
        reliable: Callable[[], bool],
    ) -> None:
        self.app = app
        self._manager = manager
        self._outages = outages
        self._reliable = reliable
        self._scan_done = False

    def run(self) -> CheckOutcome:
        """One pass; never raises (each step reports its own failure)."""
        report = self._recover()
        lost = report is None or report.connection_lost
        registry_read = report is not None and report.registry_read
        lost |= not self._step(REPEAT_ORPHANS_SITE, self._bury_repeat_orphans)
        lost |= not self._step(UNSETTLED_SITE, self._file_unsettled)
        if self._reliable():
            lost |= not self._step(RECONCILE_SITE, self._manager.reconcile)
        return CheckOutcome(registry_read=registry_read, connection_lost=lost)

    def reconcile_now(self) -> None:
        """Reconcile out of turn (reliable fetch only); never raises."""
        if self._reliable():
            self._step(RECONCILE_SITE, self._manager.reconcile)

    def _step(self, site: str, action: Callable[[], None]) -> bool:
        """Run ``action``; False only when it failed because Redis was unavailable."""
        try:
            action()
        except Exception as exc:
            self._outages.report(site, exc)
            return not isinstance(exc, BrokerUnavailableError)
        self._outages.recovered(site)
        return True

    def _recover(self) -> RecoveryReport | None:
        settings = self.app.settings
        scan = self._reliable() and not self._scan_done
        try:
            report = recover_orphans(
                self.app.broker,
                self.app.identity,
                threshold=settings.orphan_threshold,
                max_orphanings=settings.max_orphanings,
                queued_ttl=math.ceil(settings.unique_lock_ttl),
                scan=scan,
                on_recovered=self._orphans_recovered,
            )
        except Exception as exc:
            self._outages.report(RECOVER_SITE, exc)
            return None
        if not report.connection_lost:  # recover_orphans logs the loss itself
            self._outages.recovered(RECOVER_SITE)
        if scan and report.registry_read:
            self._scan_done = True
        if report.buried:
            self._manager.handle_dead_jobs(list(report.buried), REPEAT_ORPHAN_REASON)
        return report

    def _orphans_recovered(self, identity: str, count: int) -> None:
        self.app.hooks.orphans_recovered(self.app, identity, count)

    def _bury_repeat_orphans(self) -> None:
        buried = bury_repeat_orphans(self.app.broker, time.time(),
                                     max_orphanings=self.app.settings.max_orphanings)
        if buried:
            self._manager.handle_dead_jobs(buried, REPEAT_ORPHAN_REASON)

    def _file_unsettled(self) -> None:
        filed = file_unsettled(self.app.broker)
        dead = [raw for set_name, raw in filed if set_name == "dead"]
        if dead:
            self._manager.handle_dead_jobs(dead, UNSETTLED_DEAD_REASON)
