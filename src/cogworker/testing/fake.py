"""Fake mode's runs: ``perform_one``, ``drain`` and ``drain_all`` over the recorded jobs.

A recorded job runs in the caller's thread through the real server middleware chain. When
it raises, its failure is routed as a worker would route it, with the test clock as "now",
and then the exception is raised to the caller:

* retries left → recorded again with ``retry_count`` + 1, the error fields and
  ``at = now + back-off`` (the job's ``retry_in`` or the default back-off), so advancing
  the clock past ``at`` makes the retry runnable;
* no retries left, or ``retry_in`` said "kill" → appended to ``Testing.dead``, then the
  job's ``retries_exhausted`` and the app's death handlers run;
* ``retry_in`` said "discard" → dropped.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING

from cogworker.core.errors import EmptyQueueError, TestingError
from cogworker.core.payload import Payload
from cogworker.worker.death import extend_job_locks, notify_death, release_job_locks
from cogworker.worker.executor import WHILE_EXECUTING_DELAY
from cogworker.worker.expiry import drop_if_expired
from cogworker.worker.failures import Decision, Outcome, decide, failed_payload

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.testing.recorded import RecordedJobs
    from cogworker.testing.runner import CallerThreadRunner

logger = logging.getLogger("cogworker.testing")

DRAIN_LIMIT = 10_000


class FakeRuns:
    """Runs recorded jobs for one app (see the module docstring)."""

    def __init__(self, app: App, recorded: RecordedJobs, runner: CallerThreadRunner) -> None:
        self.app = app
        self.recorded = recorded
        self.runner = runner
        self.dead: list[Payload] = []

    def _now(self) -> float | None:
        testing = self.app.testing
        return testing.now() if testing.frozen else None

    def _take_due(self, name: str | None) -> Payload | None:
        """The next due job, dropping the expired ones on the way (as a worker would)."""
        while (job := self.recorded.take_due(name, self._now())) is not None:
            if not drop_if_expired(self.app, job):
                return job
        return None

    def perform_one(self, name: str) -> object:
        job = self._take_due(name)
        if job is None:
            raise EmptyQueueError(self._empty_message(name))
        if self.runner.dropped(job):
            return None
        return self._run(job)

    def drain(self, name: str, limit: int = DRAIN_LIMIT) -> int:
        return self._drain(name, limit)

    def drain_all(self, limit: int = DRAIN_LIMIT) -> int:
        return self._drain(None, limit)

    def _drain(self, name: str | None, limit: int) -> int:
        ran = 0
        while (job := self._take_due(name)) is not None:
            if ran >= limit:
                self.recorded.add(job)
                raise TestingError(
                    f"drained {ran} jobs and {job.get('class')!r} keeps coming: a job "
                    "probably enqueues itself without end; pass limit= if this is expected"
                )
            if not self.runner.dropped(job):  # a cancelled jid is dropped, not run
                self._run(job)
                ran += 1
        return ran

    def _run(self, job: Payload) -> object:
        if self.app.hooks.unique_job_starting(self.app, job) is False:
            self._postpone(job)
            return None
        try:
            return self.runner.run(job)
        except Exception as exc:
            self._route_failure(job, exc)
            raise

    def _postpone(self, job: Payload) -> None:
        later = dict(job)
        later["at"] = self.app.testing.now() + WHILE_EXECUTING_DELAY
        self.recorded.add(later)
        logger.info("postponed: %s jid=%s: another copy is running (while_executing)",
                    job.get("class"), job.get("jid"))

    def _route_failure(self, job: Payload, exc: Exception) -> None:
        definition = self.app.registry.get(str(job.get("class")))
        decision = decide(definition, job, exc)
        now = self.app.testing.now()
        stored = failed_payload(job, exc, now)
        if decision.outcome is Outcome.DISCARD:
            release_job_locks(self.app, stored, "discarded")
            self.app.hooks.job_discarded(self.app, stored, exc)
        elif decision.outcome is Outcome.RETRY:
            self._record_retry(stored, exc, decision, now)
        else:
            self.dead.append(stored)
            release_job_locks(self.app, stored, "killed" if decision.killed else "dead")
            notify_death(self.app, stored, exc)

    def _record_retry(self, stored: Payload, exc: Exception, decision: Decision,
                      now: float) -> None:
        stored["at"] = now + decision.delay
        self.recorded.add(stored)
        extend_job_locks(self.app, stored, decision.delay)
        self.app.hooks.job_retried(self.app, stored, exc, decision.delay)

    def _empty_message(self, name: str) -> str:
        count, next_at = self.recorded.next_at(name)
        if count == 0:
            return (f"no jobs of {name} recorded: nothing of that job was pushed in fake mode "
                    "since the last clear")
        now = self.app.testing.now()
        when = _iso(next_at) if next_at is not None else "?"
        return (f"no jobs of {name} due at {_iso(now)}: {count} recorded for later (the "
                f"first at {when}); move the test clock with app.testing.advance(seconds)")


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).isoformat()
