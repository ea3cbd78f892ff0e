"""The run history: pages of records filtered, sorted and paged by the broker.

Recorded by the ``history`` plugin (one record per run: each success and each failed
attempt). Built from an App or a broker, or reached as ``app.history``::

    history = app.history
    page = history.page(status="failed", job_class="billing.Invoice", limit=50)
    for record in page.records:
        print(record.jid, record.duration, record.error_class)
    more = history.page(status="failed", job_class="billing.Invoice", cursor=page.cursor)

    history.timeline(jid)        # every run of one job, oldest first
    history.daily_counts(30)     # {"2026-12-01": DailyCount(success=..., failed=...)}

How a page is read (the Web UI pages the same way):

* with at most one of ``status``, ``job_class``, ``queue``, ``jid`` (and any time range),
  newest or oldest first, or sorted by duration over everything or one class, a page is
  one index read: ``offset`` works;
* otherwise (two or more of them; a duration sort with a status, queue or jid filter but
  no class) the broker walks the smallest index that fits and checks the other
  conditions, :data:`~cogworker.core.broker.history.PAGE_WINDOW` records a call; this
  method calls again until the page is full, the end is reached or ``budget`` seconds
  passed, so a page may hold fewer records than asked, with a ``cursor`` to go on from;
  ``offset`` is refused;
* ``total`` counts every match with at most one of the four filters; with more it is None
  (unknown) unless the walk saw everything.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import time
from dataclasses import replace

from cogworker.api._source import Source, resolve_broker
from cogworker.core.broker import (
    HISTORY,
    DailyCount,
    HistoryPage,
    HistoryQuery,
    HistoryRecord,
    HistoryStore,
)
from cogworker.core.broker.history import MAX_PAGE, RunStatus, SortKey
from cogworker.core.broker.history_index import is_index_read
from cogworker.core.errors import CogworkerError

DEFAULT_LIMIT = 25
DEFAULT_BUDGET = 0.5
"""Seconds one :meth:`History.page` of a combined filter may spend walking windows."""
MAX_DAYS = 3660

Moment = float | dt.datetime


def epoch_ms(moment: Moment | None) -> int | None:
    """Epoch milliseconds of epoch seconds or a datetime (a naive one is UTC)."""
    if moment is None:
        return None
    if isinstance(moment, dt.datetime):
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.timezone.utc)
        return int(moment.timestamp() * 1000)
    return int(float(moment) * 1000)


def encode_cursor(cursor: str | None) -> str | None:
    """A store's cursor as URL-safe text (a store's own may hold any byte)."""
    if cursor is None:
        return None
    return base64.urlsafe_b64encode(cursor.encode("utf-8", "surrogateescape")).decode(
        "ascii").rstrip("=")


def decode_cursor(text: str | None) -> str | None:
    """The store's cursor from :func:`encode_cursor`'s text; ``ValueError`` for text that
    is not one."""
    if text is None:
        return None
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode(
            "utf-8", "surrogateescape")
    except (binascii.Error, ValueError):
        raise ValueError(f"not a history cursor: {text[:40]!r}; pass the cursor a previous "
                         "page returned") from None


class History:
    """The run history of the source's broker (see the module docstring)."""

    def __init__(self, source: Source) -> None:
        broker = resolve_broker(source)
        store = broker.extension(HISTORY)
        if store is None:
            raise CogworkerError(f"broker {broker.name} keeps no run history (it has no "
                                 f"{HISTORY.name!r} facet); use a broker that does, such as "
                                 "redis or memory")
        self._store: HistoryStore = store

    def page(self, *, status: RunStatus | None = None, job_class: str | None = None,
             queue: str | None = None, jid: str | None = None, since: Moment | None = None,
             until: Moment | None = None, sort: SortKey = "finished_at",
             descending: bool = True, limit: int = DEFAULT_LIMIT, cursor: str | None = None,
             offset: int = 0, budget: float = DEFAULT_BUDGET) -> HistoryPage:
        """Up to ``limit`` records (1..1000) that finished between ``since`` and
        ``until`` (both included) and match every filter given, newest first by default
        (``sort="duration"``: slowest first; ``descending=False`` reverses). Pass the
        returned ``cursor`` (URL-safe text) to get the next page. Bad arguments raise
        ``ValueError``."""
        query = HistoryQuery(status=status, job_class=job_class, queue=queue, jid=jid,
                             finished_from=epoch_ms(since), finished_to=epoch_ms(until),
                             sort=sort, descending=descending)
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be 1 to {MAX_PAGE}, not {limit}")
        raw_cursor = decode_cursor(cursor)
        page = self._store.page(query, limit=limit, cursor=raw_cursor, offset=offset)
        if not is_index_read(query):
            page = self._fill(query, page, limit, raw_cursor is None,
                              time.monotonic() + budget)
        return replace(page, cursor=encode_cursor(page.cursor))

    def _fill(self, query: HistoryQuery, page: HistoryPage, limit: int, from_start: bool,
              deadline: float) -> HistoryPage:
        """Walk more windows of a combined query until the page is full, the walk ends or
        the deadline passes."""
        records, examined, cursor = list(page.records), page.examined, page.cursor
        while cursor is not None and len(records) < limit and time.monotonic() < deadline:
            more = self._store.page(query, limit=limit - len(records), cursor=cursor)
            records += more.records
            examined += more.examined
            cursor = more.cursor
        total = len(records) if from_start and cursor is None else None
        return HistoryPage(records, cursor, total, examined)

    def count(self, *, status: RunStatus | None = None, job_class: str | None = None,
              queue: str | None = None, jid: str | None = None, since: Moment | None = None,
              until: Moment | None = None) -> int | None:
        """How many records match (None when two or more filters are combined)."""
        return self._store.count(HistoryQuery(
            status=status, job_class=job_class, queue=queue, jid=jid,
            finished_from=epoch_ms(since), finished_to=epoch_ms(until)))

    def timeline(self, jid: str, limit: int = MAX_PAGE) -> list[HistoryRecord]:
        """Every kept run of job ``jid`` (up to ``limit``), oldest first: its failed
        attempts and its success, one index read."""
        return self._store.page(HistoryQuery(jid=jid, descending=False), limit=limit).records

    def daily_counts(self, days: int = 30, now: float | None = None) -> dict[str, DailyCount]:
        """Runs per UTC day for the ``days`` days ending today (oldest first), for the
        days that have counts (days nobody recorded, or past their retention, are left
        out)."""
        if not 1 <= days <= MAX_DAYS:
            raise ValueError(f"days must be 1 to {MAX_DAYS}, not {days}")
        today = dt.datetime.fromtimestamp(time.time() if now is None else now,
                                          dt.timezone.utc).date()
        names = [(today - dt.timedelta(days=back)).isoformat()
                 for back in range(days - 1, -1, -1)]
        counts = self._store.daily_counts(names)
        return {name: counts[name] for name in names if name in counts}
