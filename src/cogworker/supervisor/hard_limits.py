"""The hard time limit: a job still running ``time_limit_grace`` seconds past its limit.

Inside a worker a time limit is an exception raised into the job (:mod:`cogworker.worker.
time_limits`), which a job stuck in one C call, or one that swallows it, never feels. The
supervisor is not held by its children's threads, so it watches for that case: once a
second it reads what each child runs (``broker.processes.work``; each child publishes it
at every beat). A job whose ``run_at`` lies more than ``limit + time_limit_grace`` in the
past is **hard-stuck**: the child is killed (it cannot be trusted to stop), and once it is
reaped the stuck job is filed as failed with ``JobTimeoutError`` (so it is retried, or dead
when out of retries: never re-run as an orphan) in the one atomic step that also drops it
from the child's held jobs. The child's other jobs then go back to their queues with the
dead child's recovery. A child that stalls so hard it stops beating keeps its last
published work (its presence expired while its process is still alive).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cogworker.core.broker import RunningJob, SortedSetName, UnitOfWork
from cogworker.core.payload import decode, encode
from cogworker.worker.death import notify_death, release_job_locks
from cogworker.worker.failures import Outcome, decide, failed_payload
from cogworker.worker.time_limits import job_time_limit, timeout_error

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.supervisor.children import Child

logger = logging.getLogger("cogworker.supervisor")


class HardLimits:
    """Finds hard-stuck jobs in children and files them once their child is dead."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._last_seen: dict[str, list[RunningJob]] = {}
        self._watching: bool | None = None

    def watching(self) -> bool:
        """Whether any job can have a limit: ``job_time_limit`` is set, or a registered job
        declares ``time_limit`` (one set per call with ``.set(time_limit=...)`` on a job
        that declares none, under no default, is enforced inside the child only)."""
        if self._watching is None:
            registry = self.app.registry
            self._watching = self.app.settings.job_time_limit > 0 or any(
                (definition := registry.get(name)) is not None
                and definition.options.get("time_limit") for name in registry.names())
        return self._watching

    def overdue(self, child: Child, now: float) -> list[Mapping[str, Any]]:
        """The payloads ``child`` runs past their limit plus the grace (a read error: [])."""
        if not self.watching():
            return []
        settings = self.app.settings
        processes = self.app.broker.processes
        try:
            running = processes.work(child.identity)
            if not running and processes.get(child.identity) is None:
                running = self._last_seen.get(child.identity, [])  # stalled: not beating
        except Exception as exc:
            logger.debug("reading the work of %s failed: %s", child.identity, exc)
            return []
        self._last_seen[child.identity] = running
        found = []
        for job in running:
            limit = job_time_limit(job.work.payload, settings.job_time_limit,
                                   self._declared(job.work.payload))
            if limit is not None and now - job.work.run_at > limit + settings.time_limit_grace:
                found.append(job.work.payload)
        return found

    def _declared(self, job: Mapping[str, Any]) -> Mapping[str, Any] | None:
        definition = self.app.registry.get(str(job.get("class")))
        return definition.options if definition is not None else None

    def forget(self, identity: str) -> None:
        self._last_seen.pop(identity, None)

    def file_timed_out(self, identity: str, jobs: list[Mapping[str, Any]]) -> None:
        """After the child's death: file each of ``jobs`` as failed with the timeout."""
        try:
            held = self.app.broker.held.held(identity)
        except Exception as exc:
            logger.warning("could not read the held jobs of %s (%s); its stuck jobs will be "
                           "recovered as orphans instead", identity, exc)
            return
        wanted = {str(job.get("jid")) for job in jobs}
        for raw in held:
            try:
                job = decode(raw)
            except Exception:
                continue
            if str(job.get("jid")) in wanted:
                wanted.discard(str(job.get("jid")))
                self._file(identity, raw, job)

    def _file(self, identity: str, raw: str, job: dict[str, Any]) -> None:
        limit = job_time_limit(job, self.app.settings.job_time_limit,
                               self._declared(job)) or 0.0
        label = f"{job.get('class')} jid={job.get('jid')}"
        exc = timeout_error(label, limit)
        definition = self.app.registry.get(str(job.get("class")))
        decision = decide(definition, job, exc)
        now = time.time()
        stored = failed_payload(job, exc, now)
        set_name: SortedSetName = "dead" if decision.outcome is Outcome.DEAD else "retry"
        score = now + decision.delay if set_name == "retry" else now
        work = UnitOfWork(str(job.get("queue") or "default"), raw)
        try:
            filed = self.app.broker.held.file(identity, work, set_name, score, encode(stored))
        except Exception as exc_write:
            logger.warning("filing hard-stuck %s failed (%s); it is recovered as an orphan",
                           label, exc_write)
            return
        if not filed:
            return
        logger.warning("hard time limit: %s was still running %g s past its limit of %g s; "
                       "its child was replaced and the job filed into %s", label,
                       self.app.settings.time_limit_grace, limit, set_name)
        if set_name == "retry":
            self.app.hooks.job_retried(self.app, stored, exc, decision.delay)
        else:
            release_job_locks(self.app, stored, "dead")
            notify_death(self.app, stored, exc)
