"""Death hooks: run once per death, by whoever's write put the job into dead."""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from cogworker.core.callables import call_with_arity
from cogworker.core.payload import Payload

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.death")


def notify_death(app: App, job: Payload, exc: BaseException) -> None:
    """The job's ``retries_exhausted``, then each app death handler, then ``job_died``.

    Each gets its own deep copy of the stored payload and is isolated from the others.
    """
    jid = job.get("jid")
    definition = app.registry.get(str(job.get("class")))
    if definition is not None and definition.retries_exhausted is not None:
        try:
            call_with_arity(definition.retries_exhausted, copy.deepcopy(job), exc)
        except BaseException:  # user code: whatever it raises, the others still run
            logger.exception("retries_exhausted failed for jid=%s", jid)
    for handler in list(app.death_handlers):
        try:
            call_with_arity(handler, copy.deepcopy(job), exc)
        except BaseException:  # user code: whatever it raises, the others still run
            logger.exception("death handler %r failed for jid=%s", handler, jid)
    app.hooks.job_died(app, copy.deepcopy(job), exc)


def release_job_locks(app: App, job: Payload, reason: str) -> None:
    """Release the unique and cron locks of a job that finished for good (isolated).

    The lock plugins hear about every job, as they are asked about every push: which jobs
    hold a lock is theirs to know (the built-ins' ``unique`` option and cron fields are
    rules of theirs, not the engine's).
    """
    app.hooks.release_unique_lock(app, job, reason)
    app.hooks.release_periodic_lock(app, job)


def extend_job_locks(app: App, job: Payload, wait: float) -> None:
    """Keep a retrying job's locks over its ``wait`` (seconds until it is due); each lock
    plugin adds its own margin and checks the owner."""
    app.hooks.extend_unique_lock(app, job, wait)
    app.hooks.touch_periodic_lock(app, job, wait)
