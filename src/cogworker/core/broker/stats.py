"""``broker.stats``: fleet-wide counters of finished jobs, in total and per UTC hour.

Counters are bookkeeping: writers are best-effort (a lost second of counts never costs a
job), and hourly counts are kept :data:`THROUGHPUT_HOURS_KEPT` hours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

THROUGHPUT_HOURS_KEPT = 25
"""Hours an hourly count is kept after its last write (so a full day is always there)."""


@dataclass(frozen=True, slots=True)
class StatsTotals:
    """Jobs that finished successfully, and failed attempts (retries, burials and discards
    included), since the namespace was created."""

    processed: int
    failed: int


@dataclass(frozen=True, slots=True)
class HourlyCount:
    """What finished in one UTC hour (``hour`` = epoch seconds // 3600)."""

    hour: int
    processed: int
    failed: int


class StatsStore(Protocol):
    """The counters of one namespace. Thread-safe.

    Every method raises :class:`~cogworker.core.errors.BrokerUnavailableError` when the
    store cannot be reached and :class:`~cogworker.core.errors.BrokerError` on any other
    failure, the driver's exception as ``__cause__``.
    """

    def record_outcomes(self, processed: int, failed: int, now: float) -> None:
        """Add ``processed`` and ``failed`` to the totals and to the hour of ``now``, in one
        atomic step. Both 0: nothing is written."""
        ...

    def totals(self) -> StatsTotals:
        """The totals now (0 for a count never written or unreadable)."""
        ...

    def throughput(self, first_hour: int, last_hour: int) -> list[HourlyCount]:
        """One count per hour from ``first_hour`` to ``last_hour`` (both included, oldest
        first), read together; an hour nobody recorded, or no longer kept, counts 0.
        ``last_hour`` before ``first_hour`` gives []."""
        ...
