"""Cancelling a job by jid: ``app.cancel(jid)`` and ``cogworker cancel JID``.

The job is found where it is (the introspection look-up :func:`~cogworker.api.job_lookup.
find_job`: running, on a queue, in retry, in the schedule, in dead), then the cancellation
is recorded on the broker (``broker.extension(CANCELLATIONS)``), kept
``plugin_options.cancel.ttl`` seconds, and announced to every worker:

* a job waiting on a queue, in the schedule or in the retry set is removed in the same
  atomic step (the record first, the removal second): :attr:`CancelOutcome.CANCELLED`. Its
  locks are released and ``cogworker_job_cancelled(..., "before_start")`` is called here;
* a job that is running: its worker tells it (``job.cancelled()``, its task cancelled,
  ``cancel="raise"``): :attr:`CancelOutcome.SIGNALLED`. So is a job that left its queue
  between the look-up and the removal (a worker fetched it): the stored cancellation drops
  it when it starts, or tells its run;
* a job in dead, one found nowhere that was cancelled already, or one whose status
  (``status`` plugin) says it finished: :attr:`CancelOutcome.TOO_LATE`, and nothing is
  recorded;
* a jid found nowhere: :attr:`CancelOutcome.UNKNOWN`. The cancellation is recorded all the
  same (a job with that jid that turns up within the TTL — being pushed right now, held by
  a worker between its fetch and its start — is dropped).

Because the cancellation is stored, a cancelled job that is recovered from a dead process,
or retried, within the TTL does not run either. The workers need the ``cancel`` plugin.
"""

from __future__ import annotations

import enum
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogworker.api.job_lookup import find_job
from cogworker.api.status import job_status
from cogworker.core.broker import CANCELLATIONS, CancellationStore, WaitingEntry, WaitingPlace
from cogworker.core.errors import CogworkerError
from cogworker.plugins.cancel.options import PLUGIN_NAME, CancelOptions

if TYPE_CHECKING:
    from cogworker.api.job_rows import JobRow
    from cogworker.core.plugin_host import PluginHost

logger = logging.getLogger("cogworker.cancel")

FINISHED_STATES = frozenset({"complete", "failed", "expired", "cancelled"})
"""Status-plugin states after which a job never runs again by itself."""
_PLACE_OF: dict[str, WaitingPlace] = {
    "enqueued": "queue", "scheduled": "schedule", "retrying": "retry"}


class CancelOutcome(enum.Enum):
    """What a cancellation did (see the module docstring)."""

    CANCELLED = "cancelled"
    """It had not started: it was removed and will not run."""
    SIGNALLED = "signalled"
    """It is running (or a worker holds it): the workers were told."""
    TOO_LATE = "too_late"
    """It already finished (done, dead, expired, cancelled): nothing was changed."""
    UNKNOWN = "unknown"
    """No job with that jid was found; the cancellation is kept in case it turns up."""


@dataclass(frozen=True, slots=True)
class CancelResult:
    """One cancellation's outcome; ``where`` says where the job was found (``queue
    default``, ``schedule``, ``retry``, ``running on <process>``, ``dead``, ``status
    complete``), empty when nowhere."""

    jid: str
    outcome: CancelOutcome
    where: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"jid": self.jid, "outcome": self.outcome.value, "where": self.where}


def cancellation_store(app: PluginHost) -> CancellationStore:
    """The broker's cancellation facet, or a clear error when it has none."""
    store = app.broker.extension(CANCELLATIONS)
    if store is None:
        raise CogworkerError(f"broker {app.broker.name!r} keeps no cancellations (it has no "
                             f"{CANCELLATIONS.name!r} facet); use the redis or memory broker")
    return store


def checked_jid(jid: object) -> str:
    """``jid`` without surrounding blanks; ValueError when it names no job."""
    if not isinstance(jid, str) or not jid.strip():
        raise ValueError(f"a cancellation names a job by its jid, not {jid!r}")
    return jid.strip()


def kept_until(app: PluginHost, now: float) -> float:
    """When a cancellation recorded at ``now`` expires (``plugin_options.cancel.ttl``)."""
    return now + CancelOptions.parse(app.options(PLUGIN_NAME)).ttl


def cancel_job(app: PluginHost, jid: str) -> CancelResult:
    """Cancel job ``jid`` (see the module docstring); raises the broker's errors."""
    jid = checked_jid(jid)
    store = cancellation_store(app)
    now = app.clock()
    until = kept_until(app, now)
    row = find_job(app, jid)
    if row is None:
        return _not_found(app, store, jid, now, until)
    if row.status == "dead":
        return CancelResult(jid, CancelOutcome.TOO_LATE, "dead")
    if row.status == "running":
        store.cancel(jid, until, now)
        return CancelResult(jid, CancelOutcome.SIGNALLED, f"running on {row.process}")
    return _remove_waiting(app, store, row, until, now)


def _remove_waiting(app: PluginHost, store: CancellationStore, row: JobRow, until: float,
                    now: float) -> CancelResult:
    place = _PLACE_OF[row.status]
    where = f"queue {row.queue}" if place == "queue" else place
    waiting = WaitingEntry(place, row.raw, row.queue or "")
    if not store.cancel(row.jid, until, now, waiting):
        return CancelResult(row.jid, CancelOutcome.SIGNALLED, f"left {where} for a worker")
    _removed(app, row)
    return CancelResult(row.jid, CancelOutcome.CANCELLED, where)


def _removed(app: PluginHost, row: JobRow) -> None:
    """The bookkeeping of a removed job; a failure is logged, the job stays cancelled."""
    try:
        job = json.loads(row.raw)
    except ValueError:
        return
    if isinstance(job, dict):
        removed_before_start(app, job, row.status)


def removed_before_start(app: PluginHost, job: dict[str, Any], where: str) -> None:
    """Log a job cancelled and removed from ``where``, release its locks and call
    ``cogworker_job_cancelled(..., "before_start")``; a failure is logged."""
    logger.info("cancelled: %s jid=%s removed from %s before it started", job.get("class"),
                job.get("jid"), where)
    try:
        app.hooks.release_unique_lock(app, job, "cancelled")
        app.hooks.release_periodic_lock(app, job)
        app.hooks.job_cancelled(app, job, "before_start")
    except Exception:
        logger.exception("bookkeeping after cancelling jid=%s failed", job.get("jid"))


def _holder(app: PluginHost, jid: str) -> str | None:
    """The process holding ``jid`` (fetched, or running before its next beat published
    it), from the first step of ``broker.locate``, which reads the held jobs whole."""
    sighting = app.broker.locate([jid]).found.get(jid)
    return sighting.place if sighting is not None and sighting.where == "running" else None


def _not_found(app: PluginHost, store: CancellationStore, jid: str, now: float,
               until: float) -> CancelResult:
    holder = _holder(app, jid)
    if holder is not None:
        store.cancel(jid, until, now)
        return CancelResult(jid, CancelOutcome.SIGNALLED, f"running on {holder}")
    if store.is_cancelled(jid, now):  # and found nowhere: it will not run
        return CancelResult(jid, CancelOutcome.TOO_LATE, "cancelled already")
    status = job_status(app, jid)
    if status is not None and status.state in FINISHED_STATES:
        return CancelResult(jid, CancelOutcome.TOO_LATE, f"status {status.state}")
    store.cancel(jid, until, now)
    if status is not None:  # pushed, or working, yet not where the look-up went
        return CancelResult(jid, CancelOutcome.SIGNALLED, f"status {status.state}")
    return CancelResult(jid, CancelOutcome.UNKNOWN)
