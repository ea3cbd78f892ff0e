"""What a person does to one job or one state's jobs: retry now, reschedule, delete, clear.

A job is named by its state, jid and (for sorted sets) score, or queue: the exact stored
entry is found again before anything changes, so a form never has to carry a payload.
Every move back to a queue is :meth:`SortedSet.requeue` (atomic, push first).
"""

from __future__ import annotations

import time

from cogworker.api._source import Source, resolve_broker
from cogworker.api.job_lookup import find_entry, find_job, sorted_set
from cogworker.api.job_rows import SORTED_SET_OF, Status
from cogworker.api.queues import Queue

MIN_DELAY_MINUTES = 1
MAX_DELAY_MINUTES = 10_080
"""Reschedule: from one minute to one week ahead."""

def retry_now(source: Source, status: Status, jid: str, score: float | None = None) -> bool:
    """Put the job back on its queue now; False when it is no longer there.

    Raises :class:`~cogworker.core.errors.PayloadError` for an entry that cannot go back
    on a queue (an unreadable burial): delete it instead.
    """
    entry = find_entry(source, status, jid, score)
    return entry is not None and entry.retry_now()


def reschedule(source: Source, status: Status, jid: str, minutes: int,
               score: float | None = None, now: float | None = None) -> bool:
    """Run the job ``minutes`` from now (clamped to 1 … 10,080) with the same payload, so
    its attempt count and last error carry over. False when it is no longer there."""
    if status not in ("scheduled", "retrying"):
        raise ValueError(f"only scheduled and retrying jobs can be rescheduled, not {status}")
    entry = find_entry(source, status, jid, score)
    if entry is None:
        return False
    delay = max(MIN_DELAY_MINUTES, min(minutes, MAX_DELAY_MINUTES)) * 60
    due = (time.time() if now is None else now) + delay
    return resolve_broker(source).sets.reschedule(SORTED_SET_OF[status], entry.value, due)


def delete_job(source: Source, status: Status, jid: str, *, score: float | None = None,
               queue: str | None = None, position: int | None = None) -> bool:
    """Delete one job (an enqueued one needs its ``queue``); False when it was gone."""
    if status == "enqueued":
        if queue is None:
            raise ValueError("deleting an enqueued job needs its queue")
        row = find_job(source, jid, "enqueued", queue=queue, position=position)
        return row is not None and Queue(source, queue).delete(row.raw) > 0
    entry = find_entry(source, status, jid, score)
    return entry is not None and entry.delete()


def clear_jobs(source: Source, status: Status, queue: str | None = None) -> int:
    """Delete every job of ``status`` (enqueued: of one ``queue``); returns how many."""
    if status == "enqueued":
        if queue is None:
            raise ValueError("clearing enqueued jobs needs a queue name")
        target = Queue(source, queue)
        size = target.size()
        target.clear()
        return size
    return sorted_set(source, status).clear()
