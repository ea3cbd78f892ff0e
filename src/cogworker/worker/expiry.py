"""Expired jobs: dropped when fetched, never run (``expires_in`` / ``expires_at``).

A job's ``expires_at`` (epoch seconds, stamped at push from ``expires_in``, counted from when
the job is due) is checked when a worker fetches it, and when a test drains it in fake
mode, with the app's clock. A job past it is acknowledged without running: logged, its
unique and cron locks released, and the ``cogworker_job_expired`` hook told (the history
and metrics plugins record it there). A retry keeps its first ``expires_at``: a job whose
retry would start after it is dropped too.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from cogworker.core.payload import Payload
from cogworker.worker.death import release_job_locks

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.job")


def seconds_late(job: Payload, now: float) -> float | None:
    """How long ago the job's ``expires_at`` passed, or None when it has not (or the job
    has none, or it is not a number: pushes refuse such values)."""
    expires_at = job.get("expires_at")
    if expires_at is None or isinstance(expires_at, bool):
        return None
    if not isinstance(expires_at, int | float):
        return None
    late = now - expires_at
    return late if late >= 0 else None


def drop_if_expired(app: App, job: Payload) -> bool:
    """Drop ``job`` if its ``expires_at`` has passed (see the module docstring); True when
    it was dropped. Bookkeeping failures are logged, never raised."""
    if "expires_at" not in job:
        return False
    late = seconds_late(job, app.clock())
    if late is None:
        return False
    logger.warning("expired: %s jid=%s on queue %s was not started by its expires_at "
                   "(%.1f s ago); dropped without running", job.get("class"), job.get("jid"),
                   job.get("queue"), late)
    try:
        release_job_locks(app, job, "expired")
        app.hooks.job_expired(app, job, late)
    except Exception:
        logger.exception("bookkeeping after dropping expired jid=%s failed", job.get("jid"))
    return True
