"""One page of the History tab, read through :class:`cogworker.api.history.History`.

Three ways to page, chosen by the filters:

* an *index read* (at most one of status, class, queue, jid, any time range): numbered
  pages by offset, with the exact total;
* a *combined* filter: the API walks the smallest index and pages by cursor ("Next");
* an *error text* filter: the store has no index of error texts, so the failed runs that
  match the other filters are walked :data:`SEARCH_CHUNK` at a time, at most
  :data:`SEARCH_BUDGET` records and :data:`SEARCH_SECONDS` a request, keeping those whose
  error contains the text;
  its cursor names the store's cursor before a chunk and the last run taken from it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from cogworker.api.history import History
from cogworker.core.broker.history import (
    HistoryPage,
    HistoryQuery,
    HistoryRecord,
    RunStatus,
    SortKey,
)
from cogworker.core.broker.history_index import is_index_read

SEARCH_CHUNK = 100
SEARCH_BUDGET = 4000
"""Failed runs one error-text request looks at, at most."""
SEARCH_SECONDS = 0.05
"""...and the time it may spend on them (it answers with *Search further* after that)."""
WALK_BUDGET = 0.08
"""Seconds a combined filter's page may walk (it answers with fewer rows and a cursor)."""
CURSOR_SEP = "~"
RANGES = {"15m": 900, "1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400,
          "30d": 30 * 86400}
Paging = Literal["offset", "cursor"]


@dataclass(frozen=True)
class HistoryFilters:
    """What the visitor asked for (empty strings: no filter)."""

    status: RunStatus | None = None
    job_class: str = ""
    queue: str = ""
    jid: str = ""
    error: str = ""
    range: str = ""
    sort: SortKey = "finished_at"
    descending: bool = True

    def since(self, now: float) -> float | None:
        seconds = RANGES.get(self.range)
        return None if seconds is None else now - seconds

    def query(self, now: float) -> HistoryQuery:
        since = self.since(now)
        return HistoryQuery(status="failed" if self.error else self.status,
                            job_class=self.job_class or None, queue=self.queue or None,
                            jid=self.jid or None,
                            finished_from=None if since is None else int(since * 1000),
                            sort=self.sort, descending=self.descending)


@dataclass(frozen=True)
class HistoryView:
    """The records of one page and how to reach the others."""

    records: list[HistoryRecord]
    paging: Paging
    total: int | None = None
    next_cursor: str | None = None
    examined: int = 0
    searched_all: bool = True
    error_filter: str = ""


def read_page(history: History, filters: HistoryFilters, *, per_page: int, offset: int,
              cursor: str | None, now: float | None = None) -> HistoryView:
    """The page ``filters`` and the paging parameters name (a bad cursor: ``ValueError``)."""
    moment = time.time() if now is None else now
    query = filters.query(moment)
    read = _Reader(history, query, filters.since(moment))
    if filters.error:
        if filters.status == "success":
            return HistoryView([], "cursor", total=0, error_filter=filters.error)
        return _search_errors(read, filters.error, per_page, cursor)
    if is_index_read(query):
        page = read(per_page, offset=offset)
        return HistoryView(page.records, "offset", total=page.total)
    page = read(per_page, cursor=cursor)
    return HistoryView(page.records, "cursor", total=page.total, next_cursor=page.cursor,
                       examined=page.examined)


@dataclass(frozen=True)
class _Reader:
    """``History.page`` with one query's filters and order."""

    history: History
    query: HistoryQuery
    since: float | None

    def __call__(self, limit: int, *, offset: int = 0, cursor: str | None = None
                 ) -> HistoryPage:
        query = self.query
        return self.history.page(status=query.status, job_class=query.job_class,
                                 queue=query.queue, jid=query.jid, since=self.since,
                                 sort=query.sort, descending=query.descending, limit=limit,
                                 offset=offset, cursor=cursor, budget=WALK_BUDGET)


def _split(cursor: str | None) -> tuple[str | None, str | None]:
    if not cursor:
        return None, None
    store_cursor, _, last_run = cursor.partition(CURSOR_SEP)
    return store_cursor or None, last_run or None


def _matches(record: HistoryRecord, needle: str) -> bool:
    text = f"{record.error_class or ''}: {record.error_message or ''}"
    return needle in text.casefold()


def _search_errors(read: _Reader, text: str, per_page: int, cursor: str | None
                   ) -> HistoryView:
    """Failed runs whose error contains ``text`` (case-insensitive), walked in chunks."""
    needle = text.casefold()
    chunk_cursor, skip_through = _split(cursor)
    found: list[HistoryRecord] = []
    examined = 0
    deadline = time.monotonic() + SEARCH_SECONDS
    while examined < SEARCH_BUDGET and time.monotonic() < deadline:
        page = read(SEARCH_CHUNK, cursor=chunk_cursor)
        records = page.records
        if skip_through is not None:
            runs = [record.run_id for record in records]
            records = records[runs.index(skip_through) + 1:] if skip_through in runs \
                else records
            skip_through = None
        for record in records:
            examined += 1
            if _matches(record, needle):
                found.append(record)
                if len(found) == per_page:
                    resume = f"{chunk_cursor or ''}{CURSOR_SEP}{record.run_id}"
                    return HistoryView(found, "cursor", next_cursor=resume,
                                       examined=examined, error_filter=text)
        if page.cursor is None:
            return HistoryView(found, "cursor", examined=examined, error_filter=text)
        chunk_cursor = page.cursor
    return HistoryView(found, "cursor", next_cursor=f"{chunk_cursor}{CURSOR_SEP}",
                       examined=examined, searched_all=False, error_filter=text)
