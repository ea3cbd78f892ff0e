"""``broker.extension(HISTORY)`` on Redis: the run history in two keys, plus daily counts.

* ``<ns>:history:runs`` (hash): run id → the record's JSON;
* ``<ns>:history:index`` (zset, every score 0): the lexicographic index of
  :mod:`cogworker.core.broker.history_index`, ten entries per record;
* ``<ns>:history:daily:<YYYY-MM-DD>`` (hash ``success``, ``failed``): runs per UTC day, as
  the Ruby gem keeps them, expiring ``daily_ttl`` after their last write.

An append is one script (``history_append.lua``): the records, their index entries, the
day counts and the trims, whatever the batch size (a handful of commands per batch, never
per record). A page is one script (``history_page.lua``) and, for an index read, one
ZLEXCOUNT for its total. Not the Ruby gem's layout (its ``history:all``/``:success``/
``:failed`` sets hold the records themselves and can only be filtered by scanning): the two
fleets' histories do not mix, their daily counts do.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import redis

from cogworker.core.broker.history import (
    PAGE_WINDOW,
    DailyCount,
    HistoryPage,
    HistoryQuery,
    HistoryRecord,
    HistoryRetention,
)
from cogworker.core.broker.history_index import (
    check_page_arguments,
    chosen_field,
    count_field,
    day_of,
    entries_of,
    family_range,
    plan_field,
    walk_for,
)
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from cogworker.redis.scripts import Scripts
from cogworker.redis.stats_store import count_of

PACKAGE = "cogworker.redis"


class RedisHistoryStore:
    """:class:`cogworker.core.broker.HistoryStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def append(self, records: Sequence[HistoryRecord], retention: HistoryRetention) -> None:
        if not records:
            return
        success: Counter[str] = Counter()
        failed: Counter[str] = Counter()
        for record in records:
            if record.status in ("success", "failed"):  # expired, cancelled: not runs
                (success if record.status == "success" else failed)[
                    day_of(record.finished_ms)] += 1
        days = sorted(set(success) | set(failed))
        args: list[str | int] = [
            int(retention.max_age * 1000), retention.max_entries,
            max(1, int(retention.daily_ttl * 1000)), retention.trim_limit, len(records),
            int(time.time() * 1000)]
        for day in days:
            args += [success[day], failed[day]]
        for record in records:
            args += (record.run_id, record.to_json())
        args += [part for record in records for entry in entries_of(record)
                 for part in ("0", entry)]  # a str packs faster than the int
        keys = [self._keys.history_runs, self._keys.history_index,
                *(self._keys.history_daily(day) for day in days)]
        self._scripts.run(PACKAGE, "history_append", keys, args)

    def _sizes(self, query: HistoryQuery) -> dict[str, int]:
        """Entries per equality of ``query`` (its time range counted in), one round trip."""
        names = list(query.equalities)
        pipe = self._client.pipeline(transaction=False)
        for name in names:
            low, high = family_range(query, name, query.equalities[name], "finished_at")
            pipe.zlexcount(self._keys.history_index, low, high)
        with translate_errors():
            counts: list[Any] = pipe.execute()
        return dict(zip(names, (int(count) for count in counts), strict=True))

    def count(self, query: HistoryQuery) -> int | None:
        if not query.is_countable:
            return None
        field = count_field(query)
        value = "" if field == "all" else query.equalities[field]
        low, high = family_range(query, field, value, "finished_at")
        with translate_errors():
            return int(self._client.zlexcount(self._keys.history_index, low, high))

    def page(self, query: HistoryQuery, *, limit: int, cursor: str | None = None,
             offset: int = 0, window: int = PAGE_WINDOW) -> HistoryPage:
        check_page_arguments(query, limit, cursor, offset, window)
        field = plan_field(query, cursor) or chosen_field(query, self._sizes(query))
        walk = walk_for(query, field, cursor)
        checks = walk.checks
        frm, to = walk.time_check or (None, None)
        args = [walk.low, walk.high, "1" if walk.descending else "0", offset, limit,
                min(window, PAGE_WINDOW), checks.get("status", ""), checks.get("class", ""),
                checks.get("queue", ""), checks.get("jid", ""),
                "" if frm is None else frm, "" if to is None else to]
        reply = self._scripts.run(PACKAGE, "history_page",
                                  [self._keys.history_runs, self._keys.history_index], args)
        next_cursor = as_text(reply[0]) or None
        records = [record for text in reply[2:]
                   if (record := HistoryRecord.from_json(as_text(text))) is not None]
        total = self.count(query)
        if total is None and cursor is None and next_cursor is None:
            total = len(records)  # the walk saw everything there is
        return HistoryPage(records, next_cursor, total, int(reply[1]))

    def daily_counts(self, days: Sequence[str]) -> dict[str, DailyCount]:
        if not days:
            return {}
        pipe = self._client.pipeline(transaction=False)
        for day in days:
            pipe.hmget(self._keys.history_daily(day), ["success", "failed"])
        with translate_errors():
            replies: list[Any] = pipe.execute()
        return {day: DailyCount(count_of(success), count_of(failed))
                for day, (success, failed) in zip(days, replies, strict=True)
                if success is not None or failed is not None}
