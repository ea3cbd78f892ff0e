"""``broker.stats`` in memory: processed/failed totals and hourly counts."""

from __future__ import annotations

from cogworker.core.broker import HourlyCount, StatsTotals
from cogworker.testing.memory_broker.state import MemoryState


class MemoryStats:
    """The :class:`~cogworker.core.broker.StatsStore` of a memory broker."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state

    def record_outcomes(self, processed: int, failed: int, now: float) -> None:
        if not processed and not failed:
            return
        with self._state.lock:
            self._state.count_outcomes(processed, failed, now)

    def totals(self) -> StatsTotals:
        with self._state.lock:
            return StatsTotals(self._state.processed, self._state.failed)

    def throughput(self, first_hour: int, last_hour: int) -> list[HourlyCount]:
        state = self._state
        with state.lock:
            now = state.now()
            counts = []
            for hour in range(first_hour, last_hour + 1):
                tally = state.hours.get(hour)
                if tally is None or tally.expires_at <= now:
                    counts.append(HourlyCount(hour, 0, 0))
                else:
                    counts.append(HourlyCount(hour, tally.processed, tally.failed))
            return counts
