"""``app.cancel(jid)`` in fake and inline mode: what the fleet would do, within the test.

* a job running now in this test (in a caller's thread: a job cancelling itself, or the
  inline job whose push ran the caller): its run is told, as a worker tells it
  (``job.cancelled()``, ``cancel="raise"``): :attr:`~CancelOutcome.SIGNALLED`;
* fake mode, a recorded job with that jid (waiting, scheduled, or a recorded retry):
  removed from the record, its locks released, ``cogworker_job_cancelled(...,
  "before_start")``: :attr:`~CancelOutcome.CANCELLED`;
* a job in ``app.testing.dead``, or one that already ran in this test (every inline job,
  once its push has returned): :attr:`~CancelOutcome.TOO_LATE`, and nothing is recorded;
* any other jid: :attr:`~CancelOutcome.UNKNOWN`.

Except after TOO_LATE, the cancellation is kept, as on Redis: in the memory broker the test
modes use, for ``plugin_options.cancel.ttl`` seconds of the test clock. A job with that jid
pushed later (or retried) is then dropped before it starts by the cancel plugin's start
gate, as a worker drops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.api.cancel import (
    CancelOutcome,
    CancelResult,
    cancellation_store,
    checked_jid,
    kept_until,
    removed_before_start,
)
from cogworker.core.payload import Payload
from cogworker.plugins.cancel import watch_of

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.testing.recorded import RecordedJobs
    from cogworker.testing.runner import CallerThreadRunner


def cancel_in_test(app: App, jid: str, recorded: RecordedJobs, runner: CallerThreadRunner,
                   dead: list[Payload]) -> CancelResult:
    """Cancel ``jid`` in the test modes (see the module docstring)."""
    jid = checked_jid(jid)
    if runner.is_running(jid):
        _keep(app, jid)
        return CancelResult(jid, CancelOutcome.SIGNALLED, "running in this test")
    job = recorded.remove_jid(jid)
    if job is not None:
        _keep(app, jid)
        where = _place_of(job)
        removed_before_start(app, job, f"{where} (recorded)")
        return CancelResult(jid, CancelOutcome.CANCELLED, where)
    if any(failed.get("jid") == jid for failed in dead):
        return CancelResult(jid, CancelOutcome.TOO_LATE, "dead")
    if runner.has_run(jid):
        return CancelResult(jid, CancelOutcome.TOO_LATE, "ran in this test")
    _keep(app, jid)
    return CancelResult(jid, CancelOutcome.UNKNOWN)


def _place_of(job: Payload) -> str:
    """Where a worker fleet would have found the recorded ``job``."""
    if job.get("at") is None:
        return f"queue {job.get('queue')}"
    return "retry" if "retry_count" in job else "schedule"


def _keep(app: App, jid: str) -> None:
    """Record the cancellation in the broker (the memory broker) and tell this app's
    cancel watch, which drops a later start of ``jid`` and tells a run of it now."""
    now = app.clock()
    until = kept_until(app, now)
    cancellation_store(app).cancel(jid, until, now)
    watch = watch_of(app)
    if watch is not None:
        watch.note(jid, until)
