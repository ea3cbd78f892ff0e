"""One orphan check of the poller: the fetch strategy's recovery, then its consequences.

A pass asks the fetcher (:meth:`Fetcher.recover_orphans
<cogworker.core.broker.Fetcher.recover_orphans>`) to put back the jobs dead processes
left, in its strategy's way (with the one-off keyspace scan, asked for until a report says
the registry was read in full, when this process itself fetches reliably), to file the
repeat orphans into dead and the failures stopping processes handed over. Then, each step
isolated (a failing step is reported and never skips the others):

1. the ``orphans_recovered`` hook for each dead process whose jobs were put back;
2. death hooks and lock releases for the repeat orphans filed into dead, and for the
   handed-over failures filed into dead;
3. every step of the fetcher's pass that failed, to the outage log under its site;
4. a strategy that holds jobs: reconcile this process's own held jobs with the Manager.

The pass judges other processes by their beats, so it runs only once this process's own
beats have run without a break for a settled spell (:mod:`.beat_continuity`): after a
broker outage, a frozen broker, a pause of this process or a broker that lost recent
writes, the others need a few beats of their own before their last beat is fresh again.
Until then the pass is deferred to the next poll (the reconcile of step 4 still runs).
Just before the pass, this process's own presence record is read from the broker: missing
while it should be there, it shows lost writes; and a read that waited out a frozen broker
leaves the beats unsettled again.

The outcome tells the poller whether the registry was really read and whether the
connection was lost anywhere, which decides when the next check runs and when the cron
ticker may start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from cogworker.core.broker import Fetcher, RecoveryOptions, RecoveryReport
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.outage import OutageLog
from cogworker.worker.beat_continuity import BeatContinuity
from cogworker.worker.contracts import ManagerControls

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger(__name__)

RECOVER_SITE: Final = "orphan recovery"
RECONCILE_SITE: Final = "reconcile"
SELF_CHECK_SITE: Final = "orphan check: own presence"
REPEAT_ORPHAN_REASON: Final = "orphaned"
UNSETTLED_DEAD_REASON: Final = "dead"


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """What the poller needs to know about one pass."""

    registry_read: bool
    connection_lost: bool
    deferred: bool = False
    """The pass did not run: this process's own beats have not settled yet."""


class OrphanCheck:
    """Runs orphan-check passes for one process; remembers whether its scan is done."""

    def __init__(self, app: App, manager: ManagerControls, outages: OutageLog,
                 fetcher: Fetcher, continuity: BeatContinuity | None = None) -> None:
        self.app = app
        self._continuity = continuity  # None: judge at every pass (no heartbeat to ask)
        self._manager = manager
        self._outages = outages
        self._fetcher = fetcher
        self._scan_done = False
        self._failing: set[str] = set()

    def run(self) -> CheckOutcome:
        """One pass; never raises (each step reports its own failure)."""
        if not self._may_judge():
            self.reconcile_now()
            return CheckOutcome(registry_read=False, connection_lost=False, deferred=True)
        report = self._recover()
        lost = report is None or report.connection_lost
        registry_read = report is not None and report.registry_read
        if report is not None:
            lost |= not self._step("orphans recovered hooks",
                                   lambda: self._notify_recovered(report))
            lost |= not self._step("repeat orphans",
                                   lambda: self._dead(report.buried, REPEAT_ORPHAN_REASON))
            lost |= not self._step("unsettled failures",
                                   lambda: self._dead(report.filed_dead, UNSETTLED_DEAD_REASON))
        if self._fetcher.holds_jobs():
            lost |= not self._step(RECONCILE_SITE, self._manager.reconcile)
        return CheckOutcome(registry_read=registry_read, connection_lost=lost)

    def reconcile_now(self) -> None:
        """Reconcile out of turn (a strategy that holds jobs only); never raises."""
        if self._fetcher.holds_jobs():
            self._step(RECONCILE_SITE, self._manager.reconcile)

    def _may_judge(self) -> bool:
        """Whether this process's beats have settled, confirmed by its own record on the
        broker (see the module docstring)."""
        continuity = self._continuity
        if continuity is None:
            return True
        if not continuity.settled():
            return False
        try:
            own = self.app.broker.processes.get(self.app.identity)
        except Exception as exc:
            self._outages.report(SELF_CHECK_SITE, exc)
            return False
        self._outages.recovered(SELF_CHECK_SITE)
        if own is None:
            if continuity.presence_expected():
                continuity.presence_missing()
            return False
        return continuity.settled()  # the read may have waited out a frozen broker

    def _step(self, site: str, action: Callable[[], None]) -> bool:
        """Run ``action``; False only when it failed because the broker was unavailable."""
        try:
            action()
        except Exception as exc:
            self._outages.report(site, exc)
            return not isinstance(exc, BrokerUnavailableError)
        self._outages.recovered(site)
        return True

    def _recover(self) -> RecoveryReport | None:
        settings = self.app.settings
        scan = self._fetcher.reliable and not self._scan_done
        options = RecoveryOptions(settings.orphan_threshold, settings.max_orphanings, scan)
        try:
            report = self._fetcher.recover_orphans(self.app.identity, options)
        except Exception as exc:  # the fetcher promises not to raise; a bug must not stop us
            self._outages.report(RECOVER_SITE, exc)
            return None
        self._report_steps(report)
        if scan and report.registry_read:
            self._scan_done = True
        return report

    def _report_steps(self, report: RecoveryReport) -> None:
        """Each failed step of the pass to the outage log; steps that work again recover."""
        failing = {failure.site for failure in report.failures}
        for failure in report.failures:
            self._outages.report(failure.site, failure.error)
        if not report.connection_lost and RECOVER_SITE not in failing:  # a loss is logged
            self._outages.recovered(RECOVER_SITE)
        for site in self._failing - failing:
            self._outages.recovered(site)
        self._failing = failing

    def _dead(self, records: list[str], reason: str) -> None:
        if records:
            self._manager.handle_dead_jobs(list(records), reason)

    def _notify_recovered(self, report: RecoveryReport) -> None:
        for identity, count in sorted(report.recovered.items()):
            self.app.hooks.orphans_recovered(self.app, identity, count,
                                             report.requeued_jobs(identity))
