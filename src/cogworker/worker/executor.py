"""Running one fetched job: parse, start, server middleware, perform, record the outcome.

The ack rule: a job is never run again because something failed *after* it ran. Whatever
follows ``perform`` (stats, logs, lock releases) is best-effort, except the retry/dead write
of a failure; when that write fails the job is *interrupted* (filed by a second, atomic path)
rather than put back on its queue. An error in that bookkeeping itself is logged and the job
is settled all the same: acknowledged after a success, interrupted after a failure.

Whatever a job raises fails it, ``BaseException`` included (``KeyboardInterrupt``,
``asyncio.CancelledError``, ``SystemExit``, a custom subclass): the processor thread goes on
with the next job. A ``KeyboardInterrupt`` raised inside a job is the job's own doing, since
the worker turns Ctrl-C into a graceful stop on its main thread; it is a failure like any
other (retry or dead, ``error_class`` ``KeyboardInterrupt``) and never stops the worker.
Each failed attempt logs its traceback once: at WARNING when it will be retried (or was
discarded), at ERROR when it goes to dead or its record cannot be written.

Two ends are not failures: a job a start gate drops (``cogworker_start_gate``: a cancelled
jid) is acknowledged unrun, and a run that ends in :class:`JobCancelled` (it was cancelled
while running) is settled as cancelled: acknowledged, never retried, never dead.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from cogworker.core.broker import UnitOfWork
from cogworker.core.current_job import enter_job, leave_job, run_as_current
from cogworker.core.errors import JobCancelled, OverLimit, PayloadError
from cogworker.core.middleware import JobContext, ServerChain, StartGate, run_chain
from cogworker.core.outage import OutageLog
from cogworker.core.payload import (
    MANUAL_RETRY,
    Payload,
    decode,
    encode,
    max_retries,
    unparseable_wrapper,
)
from cogworker.worker.death import extend_job_locks, release_job_locks
from cogworker.worker.event_loop import EventLoopThread
from cogworker.worker.expiry import drop_if_expired
from cogworker.worker.failures import (
    INTERRUPT_DELAY,
    Decision,
    Outcome,
    decide,
    failed_payload,
)
from cogworker.worker.job_log import JobLog
from cogworker.worker.over_limit import as_failure, rescheduled
from cogworker.worker.stats_buffer import StatsBuffer
from cogworker.worker.time_limits import TimeLimits, job_time_limit, run_limited

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.job")
job_log = JobLog(logger)

WHILE_EXECUTING_DELAY = 5.0


@dataclass(frozen=True, slots=True)
class Settlement:
    """How the processor settles a job after :meth:`JobRunner.run`.

    ``kind`` is ``ack`` (forget it), ``give_back`` (it never started: back on its queue),
    ``interrupt`` (it ran and failed, the failure write failed: file it atomically), or
    ``bury`` (not a job: file ``record``, its unparseable wrapper, in dead atomically), or
    ``reschedule`` (over a limit: file ``record`` into the schedule at ``score`` and drop
    the job, atomically; :mod:`.over_limit`).
    """

    kind: str
    died: tuple[Payload, BaseException] | None = None
    failure: tuple[Payload, BaseException, Decision] | None = None
    record: str = ""
    score: float = 0.0


ACK = Settlement("ack")
GIVE_BACK = Settlement("give_back")


class JobRunner:
    """Runs jobs for one worker process; shared by its processor threads."""

    def __init__(self, app: App, outages: OutageLog, stats: StatsBuffer,
                 event_loop: EventLoopThread) -> None:
        self.app = app
        self.hooks = app.hooks
        self.broker = app.broker
        self.outages = outages
        self.stats = stats
        self.event_loop = event_loop
        self._chain = ServerChain([*self.hooks.server_middleware(app), *app.server_middleware])
        self._gates = self.hooks.start_gate(app)
        self.time_limits = TimeLimits()

    # entry point ---------------------------------------------------------------------------
    def run(self, work: UnitOfWork, on_perform: Any = None) -> Settlement:
        try:
            job = decode(work.raw)
        except PayloadError as exc:
            return self._bury_unparseable(work, exc)
        jid, job_class = job.get("jid"), job.get("class")
        extra = {"jid": jid, "queue": work.queue, "job_class": job_class}
        if "expires_at" in job and drop_if_expired(self.app, job):
            return ACK
        if self._gates and dropped_at_gate(self._gates, job):
            return ACK
        if self._must_wait(job):
            return self._postpone(work, job)
        job_log.start(job_class, jid, work.queue, extra)
        started = time.monotonic()
        error = self._perform(work, job, on_perform)
        elapsed_ms = (time.monotonic() - started) * 1000
        if error is None:
            return self._succeeded(work, job, elapsed_ms, extra)
        if isinstance(error, JobCancelled):
            return self._cancelled(work, job, elapsed_ms, extra)
        if isinstance(error, OverLimit):
            later = rescheduled(job, error, time.time())
            if later is not None:
                return Settlement("reschedule", score=later[0], record=later[1])
            job = as_failure(job)
        try:
            self.stats.add(failed=1)
            return self._route_failure(work, job, error, extra)
        except BaseException:  # nothing was filed: the interrupt path files it atomically
            logger.exception("recording the failure of jid=%s failed; filing it by the "
                             "interrupt path", jid)
            return Settlement("interrupt",
                              failure=(job, error, Decision(Outcome.RETRY, INTERRUPT_DELAY)))

    # steps ---------------------------------------------------------------------------------
    def _succeeded(self, work: UnitOfWork, job: Payload, elapsed_ms: float,
                   extra: dict[str, Any]) -> Settlement:
        """Count, log, release locks; a failure here never makes the job run again."""
        try:
            self.stats.add(processed=1)
            job_log.done(job.get("class"), job.get("jid"), work.queue, elapsed_ms, extra)
            release_job_locks(self.app, job, "success")
        except BaseException:
            logger.exception("bookkeeping after jid=%s succeeded failed; acknowledging it all "
                             "the same (a job that ran is not run again)", job.get("jid"))
        return ACK

    def _cancelled(self, work: UnitOfWork, job: Payload, elapsed_ms: float,
                   extra: dict[str, Any]) -> Settlement:
        """A run that was cancelled: acknowledged, its locks released, never retried."""
        try:
            logger.warning("cancelled: %s jid=%s queue=%s stopped after %.1f ms; not retried",
                           job.get("class"), job.get("jid"), work.queue, elapsed_ms,
                           extra=extra)
            cancelled_run_bookkeeping(self.app, job)
        except BaseException:
            logger.exception("bookkeeping after cancelling jid=%s failed; acknowledging it",
                             job.get("jid"))
        return ACK

    def _bury_unparseable(self, work: UnitOfWork, exc: PayloadError) -> Settlement:
        """Bytes that are not a job go to dead, wrapped with their exact bytes, in the one
        atomic step that also drops them from where the fetcher holds them (see Settler)."""
        wrapper = unparseable_wrapper(work.raw, work.queue, exc.reason, time.time())
        self.stats.add(failed=1)
        logger.error("unparseable job on queue %s moved to dead: %s: %.200r", work.queue,
                     exc.reason, work.raw)
        return Settlement("bury", record=encode(wrapper))

    def _must_wait(self, job: Payload) -> bool:
        """``while_executing``: the unique plugin says another copy runs right now."""
        try:
            return self.hooks.unique_job_starting(self.app, job) is False
        except Exception:
            logger.exception("unique_job_starting failed for jid=%s; running it",
                             job.get("jid"))
            return False

    def _postpone(self, work: UnitOfWork, job: Payload) -> Settlement:
        later = dict(job)
        later["at"] = time.time() + WHILE_EXECUTING_DELAY
        try:
            self.broker.queues.store([], [(later["at"], encode(later))])
        except Exception as exc:
            self.outages.report("postpone", exc)
            return GIVE_BACK
        logger.info("postponed: %s jid=%s: another copy is running (while_executing)",
                    job.get("class"), job.get("jid"))
        return ACK

    def _perform(self, work: UnitOfWork, job: Payload, on_perform: Any) -> BaseException | None:
        """Run the server chain and the job; returns its exception, if any. The cron-lock
        plugins hear about every job starting (which jobs hold a lock is theirs to know)."""
        self.hooks.touch_periodic_lock(self.app, job, None)
        if on_perform is not None:
            on_perform(job, True)
        try:
            self.perform_chain(job, work.queue, work.raw)
        except BaseException as exc:  # whatever the job raised fails it; the thread goes on
            return exc
        finally:
            if on_perform is not None:
                on_perform(job, False)
        return None

    def perform_chain(self, job: Payload, queue: str, raw: str) -> object:
        """The server middleware chain around the job's ``perform``; exceptions propagate.

        Nothing else: no unique-lock start, no stats, no failure routing (testing's inline
        mode calls this alone).
        """
        definition = self.app.registry.get(str(job.get("class")))
        ctx = JobContext(app=self.app, job=job, queue=queue, raw=raw, definition=definition)
        return run_chain(self._chain.for_job(job), ctx, lambda: self._invoke(ctx))

    def _invoke(self, ctx: JobContext) -> object:
        job = ctx.job
        definition = self.app.registry.resolve(str(job.get("class")))
        ctx.definition = definition
        ctx.instance = definition.instantiate(str(job.get("jid")), job)
        limit = job_time_limit(job, self.app.settings.job_time_limit, definition.options)
        perform = definition.perform_callable(ctx.instance)
        # The current job and the time limit by hand, not as two context managers: this
        # runs for every job, and a job with no limit needs no watchdog entry.
        current, token = enter_job(self.app, job)
        try:
            if limit is None:
                result = perform(*job.get("args", []))
            else:
                with self.time_limits.sync_limit(limit, _label(job)):
                    result = perform(*job.get("args", []))
        finally:
            leave_job(token)
        if result is not None and inspect.isawaitable(result):
            return self.event_loop.run(run_limited(run_as_current(current, result), limit,
                                                   _label(job)))
        return result

    # failures ------------------------------------------------------------------------------
    def _route_failure(self, work: UnitOfWork, job: Payload, exc: BaseException,
                       extra: dict[str, Any]) -> Settlement:
        """Decide and file the failure; raises only before anything was written."""
        definition = self.app.registry.get(str(job.get("class")))
        try:
            decision = decide(definition, job, exc)
        except Exception:
            logger.exception("deciding the failure of jid=%s failed", job.get("jid"))
            decision = Decision(Outcome.RETRY, 60.0)
        now = time.time()
        stored = failed_payload(job, exc, now)
        if decision.outcome is Outcome.DISCARD:
            logger.warning("fail: %s jid=%s queue=%s: %s: %s; discarded (retry_in said so)",
                           job.get("class"), job.get("jid"), work.queue, type(exc).__name__,
                           stored["error_message"][:500], extra=extra, exc_info=exc)
            release_job_locks(self.app, stored, "discarded")
            self.hooks.job_discarded(self.app, stored, exc)
            return ACK
        set_name: Literal["retry", "dead"] = (
            "retry" if decision.outcome is Outcome.RETRY else "dead")
        score = now + decision.delay if set_name == "retry" else now
        record = encode(stored)
        progress = _progress(job, stored)
        try:
            self.broker.sets.file(set_name, score, record)
        except Exception as write_exc:
            logger.error("fail: %s jid=%s queue=%s: %s: %s; couldn't record the failure (%s), "
                         "filing it by the interrupt path", job.get("class"), job.get("jid"),
                         work.queue, type(exc).__name__, stored["error_message"][:500],
                         write_exc, extra=extra, exc_info=exc)
            return Settlement("interrupt", failure=(job, exc, decision))
        try:
            return self._after_filed(work, stored, exc, decision, set_name, progress, extra)
        except BaseException:  # filed already: settle it, never file it twice
            logger.exception("bookkeeping after filing jid=%s into %s failed; it stays there",
                             job.get("jid"), set_name)
            return Settlement("ack", died=(stored, exc) if set_name == "dead" else None)

    def _after_filed(self, work: UnitOfWork, stored: Payload, exc: BaseException,
                     decision: Decision, set_name: str, progress: str,
                     extra: dict[str, Any]) -> Settlement:
        cls, jid = stored.get("class"), stored.get("jid")
        if set_name == "retry":
            logger.warning("fail: %s jid=%s queue=%s: %s: %s; retry in %.0f s (%s)", cls, jid,
                           work.queue, type(exc).__name__, stored["error_message"][:500],
                           decision.delay, progress, extra=extra, exc_info=exc)
            extend_job_locks(self.app, stored, decision.delay)
            self.hooks.job_retried(self.app, stored, exc, decision.delay)
            return ACK
        why = "killed by retry_in" if decision.killed else "no retries left"
        logger.error("dead: %s jid=%s queue=%s: %s: %s (%s, %s)", cls, jid, work.queue,
                     type(exc).__name__, stored["error_message"][:500], why, progress,
                     extra=extra, exc_info=exc)
        release_job_locks(self.app, stored, "killed" if decision.killed else "dead")
        return Settlement("ack", died=(stored, exc))


def _label(job: Payload) -> str:
    """How a time limit's error names the job."""
    return f"{job.get('class')} jid={job.get('jid')}"


def _progress(job: Payload, stored: Payload) -> str:
    """"attempt 2/26", or "manual retry" for a run retried by hand from dead (beyond the
    budget, where "attempt 6/4" would only puzzle)."""
    if job.get(MANUAL_RETRY):
        return "manual retry"
    return f"attempt {stored['retry_count']}/{max_retries(job.get('retry')) + 1}"


def dropped_at_gate(gates: Sequence[StartGate], job: Payload) -> bool:
    """Whether one of the start gates dropped ``job`` (the gate did the dropped job's
    bookkeeping); a gate that raises is logged and the job runs."""
    for gate in gates:
        try:
            if gate(job):
                return True
        except Exception:
            logger.exception("start gate %r failed for jid=%s; running it", gate,
                             job.get("jid"))
    return False


def cancelled_run_bookkeeping(app: App, job: Payload) -> None:
    """After a run its cancellation stopped: its locks released, then
    ``cogworker_job_cancelled(..., "while_running")``."""
    release_job_locks(app, job, "cancelled")
    app.hooks.job_cancelled(app, job, "while_running")
