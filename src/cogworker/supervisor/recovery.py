"""Putting a dead child's jobs back at once: the OS saw it exit, so no threshold applies.

The parent asks the fetch strategy (built by the same hook as in a worker, never fetching)
to recover the child's identity (:meth:`Fetcher.recover_process
<cogworker.core.broker.Fetcher.recover_process>`). A recovery the broker could not do (it
was unreachable) is kept and tried again on later ticks; the orphan check of the live
processes remains the backstop if the supervisor itself dies meanwhile.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from cogworker.core.broker import Fetcher, RecoveryOptions, RecoveryReport
from cogworker.core.errors import JobOrphanedError
from cogworker.core.payload import decode
from cogworker.worker.death import notify_death, release_job_locks
from cogworker.worker.orphan_check import REPEAT_ORPHAN_REASON

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.supervisor")


class ChildRecovery:
    """Recovers the jobs of children that exited; keeps the ones that failed for later."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._fetcher: Fetcher | None = None
        self.pending: list[str] = []
        """Identities whose recovery has not succeeded yet."""

    def _strategy(self) -> Fetcher:
        if self._fetcher is None:
            self._fetcher = self.app.hooks.make_fetcher(self.app, self.app.broker)
        return self._fetcher

    def recover(self, identity: str) -> RecoveryReport | None:
        """Put back ``identity``'s held jobs now; on failure it stays pending."""
        settings = self.app.settings
        options = RecoveryOptions(settings.orphan_threshold, settings.max_orphanings)
        try:
            report = self._strategy().recover_process(identity, options)
        except Exception:  # the fetcher promises not to raise; a bug must not end the loop
            logger.exception("recovering the jobs of %s failed; trying again", identity)
            self._keep(identity)
            return None
        if report.connection_lost or report.failures or report.failed:
            for failure in report.failures:
                logger.warning("recovering the jobs of %s: %s failed: %s", identity,
                               failure.site, failure.error)
            self._keep(identity)
        else:
            if identity in self.pending:
                self.pending.remove(identity)
            forget(self.app, identity)
        self._announce(identity, report)
        return report

    def retry_pending(self) -> None:
        for identity in list(self.pending):
            self.recover(identity)

    def _keep(self, identity: str) -> None:
        if identity not in self.pending:
            self.pending.append(identity)

    def _announce(self, identity: str, report: RecoveryReport) -> None:
        if report.moved:
            logger.warning("put back %d job(s) left in progress by dead child %s", report.moved,
                           identity)
            self.app.hooks.orphans_recovered(self.app, identity, report.moved,
                                             report.requeued_jobs(identity))
        if report.parked or report.buried:
            logger.warning("%d job(s) of dead child %s were orphaned too often and go to dead",
                           report.parked + len(report.buried), identity)
        for raw in report.buried:  # filed into dead here: their locks and death hooks too
            bury(self.app, raw)

    def close(self) -> None:
        if self._fetcher is not None:
            self._fetcher.close()


def bury(app: App, raw: str) -> None:
    """Release the locks of a repeat orphan filed into dead and run its death hooks."""
    try:
        job = decode(raw)
    except Exception:
        return  # an unreadable record has no locks or hooks to run
    release_job_locks(app, job, REPEAT_ORPHAN_REASON)
    notify_death(app, job, JobOrphanedError(str(job.get("error_message", "orphaned"))))


def forget(app: App, identity: str) -> None:
    """Drop the process record of ``identity``, which is known to be dead, so the process
    list stops showing it (best effort: the record expires by itself anyway)."""
    try:
        app.broker.processes.remove(identity)
    except Exception as exc:
        logger.debug("could not remove the record of dead process %s: %s", identity, exc)
