"""Data shapes shared by the cron ticker and the periodic-lock plugins."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from typing import Any

from cogworker.core.payload import DEFAULT_QUEUE, dumps


def periodic_id(cron: str, job_name: str, args: list[Any]) -> str:
    """Entry identity (pjid): SHA1 of ``cron|job|args JSON``, stable across processes."""
    return hashlib.sha1(f"{cron}|{job_name}|{dumps(args)}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class PeriodicEntry:
    """One registered cron entry."""

    cron: str
    job_name: str
    args: list[Any] = field(default_factory=list)
    retry: Any = 0
    unique: str | None = None
    queue: str = DEFAULT_QUEUE

    @property
    def pjid(self) -> str:
        return periodic_id(self.cron, self.job_name, self.args)

    @property
    def until_executed(self) -> bool:
        return self.unique == "until_executed"


class ClaimOutcome(enum.Enum):
    """What one attempt to claim a cron slot found."""

    WON = "won"
    LOST = "lost"  # already fired, an older slot, or another process won the race
    BLOCKED = "blocked"  # an until_executed run of this entry still holds the running lock


@dataclass(frozen=True, slots=True)
class ClaimResult:
    outcome: ClaimOutcome
    previous_slot: int | None = None
