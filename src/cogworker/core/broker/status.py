"""``broker.extension(STATUS)``: each job's current state, progress and stored fields.

Bookkeeping, not delivery: a lost write costs a stale status, never a job. Every write
replaces a job's whole record (the writer keeps the merged record in memory), which is
what lets a worker write the statuses of a second's jobs in one call. A record lives
``ttl`` seconds after its last write; an expired one reads as unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from cogworker.core.broker.composite import Extension

JobState = Literal["queued", "scheduled", "working", "complete", "retrying", "failed",
                   "expired", "cancelled", "stopped", "interrupted"]
"""``queued`` (pushed, or put back by orphan recovery), ``scheduled`` (pushed to run
later), ``working``, ``complete``, ``retrying`` (in the retry set), ``failed`` (dead or
discarded), ``expired`` (dropped unrun: its ``expires_at`` passed), ``cancelled``
(removed before it ran, dropped when fetched, or stopped while running), ``interrupted`` (put
back by a worker that stopped while it ran), ``stopped`` (reserved for an operator's or a
plugin's own use, as in the original)."""

JOB_STATES: tuple[str, ...] = get_args(JobState)


@dataclass(frozen=True, slots=True)
class StatusRecord:
    """One job's status as stored. ``fields`` holds what the job stored (strings)."""

    jid: str
    state: JobState
    updated_at: float
    expires_at: float
    class_name: str | None = None
    queue: str | None = None
    pct: float | None = None
    message: str | None = None
    error_class: str | None = None
    error_message: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (also the stored form)."""
        return {"jid": self.jid, "state": self.state, "updated_at": self.updated_at,
                "expires_at": self.expires_at, "class": self.class_name, "queue": self.queue,
                "pct": self.pct, "message": self.message, "error_class": self.error_class,
                "error_message": self.error_message, "fields": dict(self.fields)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatusRecord | None:
        """The record :meth:`to_dict` made, or None for anything else."""
        state, jid = data.get("state"), data.get("jid")
        if state not in JOB_STATES or not isinstance(jid, str):
            return None
        try:
            updated, expires = float(data["updated_at"]), float(data["expires_at"])
        except (KeyError, TypeError, ValueError):
            return None
        pct = data.get("pct")
        fields = data.get("fields")
        return cls(jid=jid, state=state, updated_at=updated, expires_at=expires,
                   class_name=_text(data.get("class")), queue=_text(data.get("queue")),
                   pct=float(pct) if isinstance(pct, (int, float)) else None,
                   message=_text(data.get("message")),
                   error_class=_text(data.get("error_class")),
                   error_message=_text(data.get("error_message")),
                   fields={str(k): str(v) for k, v in fields.items()}
                   if isinstance(fields, dict) else {})


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class StatusStore(Protocol):
    """Job statuses. Thread-safe; raises the broker's errors (``BrokerUnavailableError``,
    ``BrokerError``)."""

    def write(self, records: Sequence[StatusRecord]) -> None:
        """Store each record, replacing the jid's earlier one; each lives until its
        ``expires_at``. Several records of one jid in a call: the last wins. One round trip
        (Redis: two commands for the whole batch); not atomic across the batch."""
        ...

    def read(self, jids: Sequence[str], max_ttl: float, now: float) -> dict[str, StatusRecord]:
        """The live records of ``jids`` (at most :data:`READ_LIMIT`), by jid; a jid that is
        unknown or whose record expired before ``now`` is absent. ``max_ttl``: the longest
        TTL a writer may have used (how far back to look). One round trip."""
        ...


DEFAULT_STATUS_TTL = 1800.0
"""Seconds a status lives after its last write by default (the original's ``expiration``)."""
READ_LIMIT = 1000
"""At most this many jids per :meth:`StatusStore.read` (``ValueError`` beyond)."""

STATUS: Extension[StatusStore] = Extension("status", "each job's current state and progress")
