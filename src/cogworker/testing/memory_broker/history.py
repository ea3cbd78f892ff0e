"""``broker.extension(HISTORY)`` in memory: the same lexicographic index as Redis's.

The records by run id, their index entries (:mod:`cogworker.core.broker.history_index`) in
one sorted list, and the day counts, each step under the broker's lock and on its clock.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from cogworker.core.broker.history import (
    PAGE_WINDOW,
    DailyCount,
    HistoryPage,
    HistoryQuery,
    HistoryRecord,
    HistoryRetention,
)
from cogworker.core.broker.history_index import (
    Walk,
    check_page_arguments,
    chosen_field,
    count_field,
    day_of,
    entries_of,
    family_range,
    full_range,
    plan_field,
    run_id_of,
    sort_key,
    walk_for,
)
from cogworker.testing.memory_broker.state import MemoryState


@dataclass(slots=True)
class DayTally:
    success: int
    failed: int
    expires_at: float


def _matches(record: HistoryRecord, walk: Walk) -> bool:
    fields = {"status": record.status, "class": record.job_class, "queue": record.queue,
              "jid": record.jid}
    if any(fields[name] != value for name, value in walk.checks.items()):
        return False
    if walk.time_check is None:
        return True
    low, high = walk.time_check
    return ((low is None or record.finished_ms >= low)
            and (high is None or record.finished_ms <= high))


class MemoryHistory:
    """The :class:`~cogworker.core.broker.HistoryStore` of a memory broker."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state
        self._records: dict[str, HistoryRecord] = {}
        self._index: list[str] = []
        self._days: dict[str, DayTally] = {}

    # index --------------------------------------------------------------------------------
    def _span(self, low: str, high: str) -> tuple[int, int]:
        """Positions in the index between two ZRANGEBYLEX-style bounds."""
        start = (bisect.bisect_left if low[0] == "[" else bisect.bisect_right)(
            self._index, low[1:])
        end = (bisect.bisect_right if high[0] == "[" else bisect.bisect_left)(
            self._index, high[1:])
        return start, max(start, end)

    def _remove(self, run_id: str) -> None:
        record = self._records.pop(run_id, None)
        if record is None:
            return
        for entry in entries_of(record):
            at = bisect.bisect_left(self._index, entry)
            if at < len(self._index) and self._index[at] == entry:
                del self._index[at]

    def _add(self, record: HistoryRecord) -> None:
        self._remove(record.run_id)
        self._records[record.run_id] = record
        for entry in entries_of(record):
            bisect.insort(self._index, entry)

    # writes -------------------------------------------------------------------------------
    def append(self, records: Sequence[HistoryRecord], retention: HistoryRetention) -> None:
        if not records:
            return
        with self._state.lock:
            now = self._state.now()
            for record in records:
                self._add(record)
                day = day_of(record.finished_ms)
                tally = self._days.get(day)
                if tally is None or tally.expires_at <= now:
                    tally = self._days[day] = DayTally(0, 0, 0.0)
                if record.status == "success":
                    tally.success += 1
                elif record.status == "failed":  # expired, cancelled: not runs
                    tally.failed += 1
                tally.expires_at = now + retention.daily_ttl
            self._trim(retention, now)

    def _trim(self, retention: HistoryRetention, now: float) -> None:
        low, high = full_range("af\x00\x00")
        cutoff = "(af\x00\x00" + sort_key(max(int(now * 1000 - retention.max_age * 1000), 0))
        start, end = self._span(low, cutoff)
        old = [run_id_of(entry) for entry in self._index[start:end][:retention.trim_limit]]
        for run_id in old:
            self._remove(run_id)
        start, end = self._span(low, high)
        excess = min(end - start - retention.max_entries, retention.trim_limit - len(old))
        for entry in self._index[start:start + max(excess, 0)]:
            self._remove(run_id_of(entry))

    # reads --------------------------------------------------------------------------------
    def _count(self, query: HistoryQuery, field: str) -> int:
        value = "" if field == "all" else query.equalities[field]
        start, end = self._span(*family_range(query, field, value, "finished_at"))
        return end - start

    def count(self, query: HistoryQuery) -> int | None:
        if not query.is_countable:
            return None
        with self._state.lock:
            return self._count(query, count_field(query))

    def page(self, query: HistoryQuery, *, limit: int, cursor: str | None = None,
             offset: int = 0, window: int = PAGE_WINDOW) -> HistoryPage:
        check_page_arguments(query, limit, cursor, offset, window)
        with self._state.lock:
            field = plan_field(query, cursor) or chosen_field(
                query, {name: self._count(query, name) for name in query.equalities})
            walk = walk_for(query, field, cursor)
            start, end = self._span(walk.low, walk.high)
            span = self._index[start:end]
            if walk.descending:
                span.reverse()
            checking = bool(walk.checks) or walk.time_check is not None
            fetched = span[offset:offset + (min(window, PAGE_WINDOW) if checking else limit + 1)]
            looked, found = min(len(fetched), len(fetched) if checking else limit), []
            for position, entry in enumerate(fetched[:looked], start=1):
                record = self._records.get(run_id_of(entry))
                if record is not None and _matches(record, walk):
                    found.append(record)
                if len(found) >= limit:
                    looked = position
                    break
            more = looked < len(fetched) or (checking and len(fetched) == min(window,
                                                                              PAGE_WINDOW))
            next_cursor = fetched[looked - 1] if more and looked else None
            total = self._count(query, count_field(query)) if query.is_countable else None
        if total is None and cursor is None and next_cursor is None:
            total = len(found)
        return HistoryPage(found, next_cursor, total, looked)

    def daily_counts(self, days: Sequence[str]) -> dict[str, DailyCount]:
        with self._state.lock:
            now = self._state.now()
            return {day: DailyCount(tally.success, tally.failed) for day in days
                    if (tally := self._days.get(day)) is not None and tally.expires_at > now}
