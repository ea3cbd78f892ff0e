"""``broker.extension(ATTEMPTS)``: the failure trail of every job that failed at least once.

One entry per failed attempt, appended when the failure is filed (one write per *failure*:
failures are rare, so this is the one per-job write of the observability plugins on a
worker), the newest ``keep`` kept, the whole trail expiring ``ttl`` seconds after its last
append, read oldest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from cogworker.core.broker.composite import Extension

AttemptOutcome = Literal["retrying", "dead", "killed", "discarded"]
"""What became of the attempt: ``retrying`` (in the retry set), ``dead`` (out of retries),
``killed`` (sent to dead by ``retry_in``), ``discarded`` (dropped by ``retry_in``)."""

ATTEMPT_OUTCOMES: tuple[str, ...] = get_args(AttemptOutcome)
TRAIL_LIMIT = 25
"""Entries a trail keeps by default (the newest)."""
TRAIL_TTL = 30 * 24 * 3600.0
"""Seconds a trail lives after its last append by default (30 days)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One failed attempt."""

    attempt: int
    failed_at: float
    outcome: AttemptOutcome
    error_class: str
    error_message: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (also the stored form)."""
        return {"attempt": self.attempt, "failed_at": self.failed_at,
                "outcome": self.outcome, "error_class": self.error_class,
                "error_message": self.error_message}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Attempt | None:
        """The attempt :meth:`to_dict` made, or None for anything else."""
        outcome = data.get("outcome")
        try:
            attempt, failed_at = int(data["attempt"]), float(data["failed_at"])
        except (KeyError, TypeError, ValueError):
            return None
        if outcome not in ATTEMPT_OUTCOMES:
            return None
        return cls(attempt, failed_at, outcome, str(data.get("error_class", "")),
                   str(data.get("error_message", "")))


class AttemptStore(Protocol):
    """Failure trails by jid. Thread-safe; raises the broker's errors."""

    def append(self, jid: str, attempt: Attempt, *, keep: int = TRAIL_LIMIT,
               ttl: float = TRAIL_TTL) -> None:
        """Add ``attempt`` at the end of ``jid``'s trail, drop all but the newest ``keep``
        and make the trail live ``ttl`` seconds from now; one atomic step."""
        ...

    def trail(self, jid: str, limit: int = TRAIL_LIMIT) -> list[Attempt]:
        """The newest ``limit`` entries of ``jid``'s trail, oldest first ([] if none)."""
        ...

    def clear(self, jids: Sequence[str]) -> int:
        """Forget the trails of ``jids``; returns how many existed. One round trip."""
        ...


ATTEMPTS: Extension[AttemptStore] = Extension("attempts", "the failure trail of each job")
