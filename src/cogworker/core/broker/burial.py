"""The dead record of a job buried for repeated orphaning, the same on every broker.

A broker's ``held.bury_repeat_orphans`` (and its recovery, for a job orphaned once too
often) files such jobs into dead; the record is built here so that every broker writes
the same error fields, and bytes that are not a job survive in an unparseable wrapper.
"""

from __future__ import annotations

from typing import Any

from cogworker.core.errors import PayloadError
from cogworker.core.payload import decode, dumps, unparseable_wrapper

ORPHANED_ERROR_CLASS = "cogworker.JobOrphanedError"
"""The ``error_class`` of a job buried because the processes running it kept dying."""


def orphan_dead_record(raw: str, now: float, max_orphanings: int) -> str:
    """The dead-set record of a job orphaned more than ``max_orphanings`` times: the job
    with the error fields of :data:`ORPHANED_ERROR_CLASS`, or, for bytes that are not a
    job, an unparseable wrapper that keeps them exactly. Never raises."""
    try:
        return dumps(_mark_orphaned(decode(raw), now, max_orphanings))
    except PayloadError as exc:
        reason = exc.reason
    except Exception as exc:  # a job that cannot be encoded again: keep its bytes instead
        reason = f"cannot be stored again: {type(exc).__name__}: {exc}"
    wrapper = unparseable_wrapper(raw, None, reason, now)
    return dumps(_mark_orphaned(wrapper, now, max_orphanings))


def _mark_orphaned(job: dict[str, Any], now: float, max_orphanings: int) -> dict[str, Any]:
    job["error_class"] = ORPHANED_ERROR_CLASS
    job["error_message"] = (
        f"orphaned more than {max_orphanings} times: the process running it died each "
        "time; find what kills it (out of memory, a crash in native code, a hard kill)"
    )
    job.setdefault("failed_at", now)
    return job
