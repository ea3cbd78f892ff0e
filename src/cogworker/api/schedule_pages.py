"""The cron schedules table: entries with next and last run, searched, sorted and paged.

Cron entries are configuration (an app declares tens, not thousands), so one request
reads them all through :func:`cogworker.periodic.admin.list_entries` and pages the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from cogworker.periodic.admin import EntryStatus, list_entries

if TYPE_CHECKING:
    from cogworker.app import App

ScheduleSort = Literal["job", "next_run", "last_run", "cron"]
SCHEDULE_SORTS: tuple[ScheduleSort, ...] = ("job", "next_run", "last_run", "cron")

_FAR = float("inf")
_SORT_KEYS: dict[ScheduleSort, Callable[[EntryStatus], Any]] = {
    "job": lambda e: (e.job, e.pjid),
    "next_run": lambda e: (e.next_run if e.next_run is not None else _FAR, e.job),
    "last_run": lambda e: (-(e.last_run or 0), e.job),
    "cron": lambda e: (e.cron, e.job),
}


@dataclass(frozen=True)
class SchedulePage:
    entries: list[EntryStatus]
    total: int
    disabled: int
    offset: int
    limit: int


def _haystack(entry: EntryStatus) -> str:
    return " ".join([entry.job, entry.cron, entry.queue, entry.pjid,
                     json.dumps(entry.args, ensure_ascii=False)]).lower()


def schedule_page(app: App, *, query: str = "", sort: ScheduleSort = "next_run",
                  offset: int = 0, limit: int = 25, now: float | None = None) -> SchedulePage:
    """Entries whose job, cron, queue, pjid or arguments contain ``query``, sorted."""
    entries = list_entries(app, now)
    needle = query.strip().lower()
    chosen = sorted((e for e in entries if needle in _haystack(e)), key=_SORT_KEYS[sort])
    offset, limit = max(offset, 0), max(limit, 1)
    return SchedulePage(chosen[offset : offset + limit], len(chosen),
                        sum(not e.enabled for e in entries), offset, limit)
