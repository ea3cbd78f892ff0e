"""A job over a limiter's limit (:class:`~cogworker.core.errors.OverLimit`): back on the
schedule, without using a retry.

The reschedule is a settlement (``reschedule``): the job, its ``limit_reschedules`` count
one higher, is filed into the schedule and dropped from where its fetcher holds it in one
atomic step (the fetcher's ``interrupt``), so it is never lost nor doubled between the two.
Its ``retry_count`` is untouched. After ``max_reschedules`` of them, the next over-limit is
a failure like any other (retry or dead), with the count starting again.
"""

from __future__ import annotations

import logging
from typing import Any

from cogworker.core.errors import OverLimit
from cogworker.core.payload import Payload, encode

logger = logging.getLogger("cogworker.job")

FIELD = OverLimit.RESCHEDULES_FIELD
DEFAULT_DELAY = 1.0
"""Seconds before an over-limit job runs again when the exception gives no delay."""


def reschedules_of(job: Payload) -> int:
    count = job.get(FIELD, 0)
    return count if isinstance(count, int) and not isinstance(count, bool) else 0


def rescheduled(job: Payload, error: OverLimit, now: float) -> tuple[float, str] | None:
    """``(score, record)`` to file into the schedule, or None when the job has had its
    ``max_reschedules`` (then it is a failure: see :func:`as_failure`)."""
    if not error.reschedules(job):
        return None
    count = reschedules_of(job)
    delay = error.delay if error.delay is not None else (
        error.retry_after if error.retry_after is not None else DEFAULT_DELAY)
    later: dict[str, Any] = dict(job)
    later[FIELD] = count + 1
    later["at"] = now + delay
    logger.info("over limit: %s jid=%s: limiter %r is full; rescheduled in %.2f s "
                "(reschedule %d of at most %d, no retry used)", job.get("class"),
                job.get("jid"), error.limiter, delay, count + 1, error.max_reschedules)
    return now + delay, encode(later)


def as_failure(job: Payload) -> Payload:
    """The job to file as a failure after its last reschedule: the count starts again."""
    return {key: value for key, value in job.items() if key != FIELD}
