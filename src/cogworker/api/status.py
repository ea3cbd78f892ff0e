"""A job's status and its failure trail, as the ``status`` and ``attempts`` plugins keep them.

::

    status = app.status(jid)          # JobStatus or None (unknown, or expired)
    if status is not None and status.state == "working":
        print(f"{status.pct or 0:.0f}% {status.message or ''}")
    for attempt in app.attempts(jid):  # oldest first
        print(attempt.attempt, attempt.outcome, attempt.error_class)

Both read the broker's optional facets (``STATUS``, ``ATTEMPTS``): a broker without them
answers None and [] like a job it never heard of. A status is written by a worker once a
second, so one read within a second of a change may show the state before it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from typing import Any

from cogworker.api._source import Source, resolve_broker
from cogworker.core.broker import ATTEMPTS, STATUS, Attempt, StatusRecord
from cogworker.core.broker.attempts import TRAIL_LIMIT
from cogworker.core.broker.status import DEFAULT_STATUS_TTL, READ_LIMIT


@dataclass(frozen=True, slots=True)
class JobStatus(StatusRecord):
    """One job's current status: the stored :class:`StatusRecord`'s fields. ``pct``
    (0 … 100) and ``message`` come from ``job.progress``; ``fields`` from ``job.store``;
    the error of its last failure."""

    @classmethod
    def from_record(cls, record: StatusRecord) -> JobStatus:
        values = {item.name: getattr(record, item.name) for item in fields(StatusRecord)}
        return cls(**{**values, "fields": dict(record.fields)})

    @property
    def updated(self) -> datetime:
        """:attr:`updated_at` as a UTC datetime."""
        return datetime.fromtimestamp(self.updated_at, tz=timezone.utc)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (what ``cogworker status --json`` prints)."""
        return {"jid": self.jid, "state": self.state, "class": self.class_name,
                "queue": self.queue, "pct": self.pct, "message": self.message,
                "error_class": self.error_class, "error_message": self.error_message,
                "fields": dict(self.fields), "updated_at": self.updated_at,
                "expires_at": self.expires_at}


def _lookback(source: Source) -> float:
    """How far back a read looks: the app's ``plugin_options.status.ttl`` (the default for
    a bare broker, or when the app's value is not a number)."""
    options = getattr(source, "options", None)
    if callable(options):
        ttl = options("status").get("ttl")
        if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0:
            return float(ttl)
    return DEFAULT_STATUS_TTL


def job_statuses(source: Source, jids: Sequence[str],
                 now: float | None = None) -> dict[str, JobStatus]:
    """The live statuses of ``jids`` (at most 1,000), by jid; unknown ones are absent."""
    if len(jids) > READ_LIMIT:
        raise ValueError(f"ask for at most {READ_LIMIT} statuses at once, not {len(jids)}")
    store = resolve_broker(source).extension(STATUS)
    if store is None or not jids:
        return {}
    moment = time.time() if now is None else now
    found = store.read(list(jids), _lookback(source), moment)
    return {jid: JobStatus.from_record(record) for jid, record in found.items()}


def job_status(source: Source, jid: str, now: float | None = None) -> JobStatus | None:
    """The job's status, or None when it is unknown or expired."""
    if not jid:
        raise ValueError("a status lookup needs a jid")
    return job_statuses(source, [jid], now).get(jid)


def job_attempts(source: Source, jid: str, limit: int = TRAIL_LIMIT) -> list[Attempt]:
    """The job's failure trail, oldest first ([] when it never failed, or it expired)."""
    if not jid:
        raise ValueError("a trail lookup needs a jid")
    store = resolve_broker(source).extension(ATTEMPTS)
    return [] if store is None else store.trail(jid, limit)
