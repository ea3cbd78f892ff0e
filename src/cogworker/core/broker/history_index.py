"""The lexicographic index the built-in history stores share (Redis and memory).

Every record has seven index entries, one per (field, order) *family*, all in one sorted
set ordered by bytes (Redis: one ZSET, every score 0, read with ZRANGEBYLEX)::

    <family> NUL <value> NUL <sort key, 13 digits> NUL <run id>

The fields are ``a`` (all: value empty), ``s`` (status), ``c`` (class), ``q`` (queue) and
``j`` (jid), each ordered by ``f`` (finished, epoch ms); ``a`` and ``c`` also by ``d``
(duration, µs). So "class ``Foo``, newest first" is the entries between ``cf NUL Foo NUL``
and ``cf NUL Foo SOH`` read backwards, a time range narrows the sort keys, and a count is
ZLEXCOUNT: every common filter is an index read. Sorting by duration with a status, queue
or jid filter (and no class) walks ``ad`` and checks the filter record by record (a
combined query, paged by cursor): each family costs a write per record, and those orders
are rarely asked for. One set for all families means one ZADD and one ZREM per batch, and a
trim removes a record from every index in the same step. Values never contain NUL
(:class:`~cogworker.core.broker.history.HistoryRecord` refuses it). The Redis store writes
the entries :func:`entries_of` builds; its script ``history_append.lua`` builds them again
from a stored record to trim it, and the contract tests hold the two together.

A cursor is the last entry a page looked at: it names its family, so the next page walks
the same index whatever the counts have become.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Final

from cogworker.core.broker.history import MAX_PAGE, HistoryQuery, HistoryRecord

SEP: Final = "\x00"
FIELD_CODES: Final = {"all": "a", "status": "s", "class": "c", "queue": "q", "jid": "j"}
ORDER_CODES: Final = {"finished_at": "f", "duration": "d"}
FAMILIES: Final = ("af", "ad", "sf", "cf", "cd", "qf", "jf")
DURATION_FIELDS: Final = ("all", "class")
"""The fields with a duration-ordered family."""
KEY_DIGITS: Final = 13


def sort_key(value: int) -> str:
    return f"{value:0{KEY_DIGITS}d}"


def entries_of(record: HistoryRecord) -> list[str]:
    """The index entries of ``record``, one per family of :data:`FAMILIES`, in its order
    (written out: a worker builds seven per run)."""
    finished, duration = sort_key(record.finished_ms), sort_key(record.duration_us)
    tail = SEP + record.run_id
    status, job_class = SEP + record.status + SEP, SEP + record.job_class + SEP
    return [f"af{SEP}{SEP}{finished}{tail}", f"ad{SEP}{SEP}{duration}{tail}",
            f"sf{status}{finished}{tail}", f"cf{job_class}{finished}{tail}",
            f"cd{job_class}{duration}{tail}", f"qf{SEP}{record.queue}{SEP}{finished}{tail}",
            f"jf{SEP}{record.jid}{SEP}{finished}{tail}"]


@dataclass(frozen=True, slots=True)
class Walk:
    """One index range to read: lex bounds in Redis syntax (``[x`` inclusive, ``(x``
    exclusive), the direction, and what each record must also satisfy."""

    low: str
    high: str
    descending: bool
    checks: dict[str, str]
    time_check: tuple[int | None, int | None] | None


def family_prefix(field: str, order: str, value: str) -> str:
    return f"{FIELD_CODES[field]}{ORDER_CODES[order]}{SEP}{value}{SEP}"


def full_range(prefix: str) -> tuple[str, str]:
    """Every entry starting with ``prefix`` (which ends in NUL)."""
    return "[" + prefix, "(" + prefix[:-1] + "\x01"


def family_range(query: HistoryQuery, field: str, value: str,
                 order: str) -> tuple[str, str]:
    """The bounds of one family, narrowed to the time range when it is ordered by it."""
    prefix = family_prefix(field, order, value)
    low, high = full_range(prefix)
    if order == "finished_at":
        if query.finished_from is not None:
            low = "[" + prefix + sort_key(max(query.finished_from, 0))
        if query.finished_to is not None:
            high = "(" + prefix + sort_key(max(query.finished_to + 1, 0))
    return low, high


def chosen_field(query: HistoryQuery, sizes: dict[str, int]) -> str:
    """The field whose index a query walks: ``all`` without equalities; sorted by
    duration, ``class`` when given, else ``all``; else the equality whose index (by
    ``sizes``, entries per field) is smallest."""
    equalities = query.equalities
    if query.sort == "duration":
        return "class" if "class" in equalities else "all"
    if not equalities:
        return "all"
    return min(equalities, key=lambda name: (sizes.get(name, 0), name))


def count_field(query: HistoryQuery) -> str:
    """The field whose finished-ordered family counts a countable query."""
    return next(iter(query.equalities), "all")


def plan_field(query: HistoryQuery, cursor: str | None) -> str | None:
    """The field a page walks when the caller need not measure index sizes (a cursor
    names it; an index read or a duration order has one choice); None when the smallest
    equality must be found first."""
    if cursor is not None:
        field = cursor_field(cursor)
        if field != "all" and field not in query.equalities:
            raise ValueError("this cursor belongs to another query: pass the cursor of the "
                             "previous page of the same query")
        return field
    if is_index_read(query) or query.sort == "duration":
        return chosen_field(query, {})
    return None


def is_index_read(query: HistoryQuery) -> bool:
    """Whether one family answers ``query`` without checking records (so an ``offset``
    works): at most one equality, and a duration order only with a class filter or none."""
    equalities = query.equalities
    if len(equalities) > 1:
        return False
    return query.sort == "finished_at" or not equalities or "class" in equalities


def walk_for(query: HistoryQuery, field: str, cursor: str | None) -> Walk:
    """The range a page of ``query`` reads when walking ``field``'s index, after
    ``cursor``; ``ValueError`` for a cursor of another index."""
    value = "" if field == "all" else query.equalities[field]
    low, high = family_range(query, field, value, query.sort)
    if cursor is not None:
        prefix = family_prefix(field, query.sort, value)
        if not cursor.startswith(prefix):
            raise ValueError("this cursor belongs to another query: pass the cursor of the "
                             "previous page of the same query (or none to start again)")
        if query.descending:
            high = "(" + cursor
        else:
            low = "(" + cursor
    checks = {name: value for name, value in query.equalities.items() if name != field}
    timed = query.finished_from is not None or query.finished_to is not None
    time_check = ((query.finished_from, query.finished_to)
                  if timed and query.sort != "finished_at" else None)
    return Walk(low, high, query.descending, checks, time_check)


def cursor_field(cursor: str) -> str:
    """The field whose index ``cursor`` (a previous page's) walks; ``ValueError`` for a
    cursor that is not one."""
    codes = {code: name for name, code in FIELD_CODES.items()}
    if len(cursor) < 3 or cursor[2] != SEP or cursor[0] not in codes \
            or cursor[1] not in ORDER_CODES.values():
        raise ValueError(f"not a history cursor: {cursor[:40]!r}; pass the cursor a "
                         "previous page returned")
    return codes[cursor[0]]


def run_id_of(entry: str) -> str:
    return entry.rsplit(SEP, 1)[-1]


DAY_MS: Final = 86_400_000


@functools.lru_cache(maxsize=64)
def _day_text(day: int) -> str:
    return dt.datetime.fromtimestamp(day * 86_400, dt.timezone.utc).strftime("%Y-%m-%d")


def day_of(finished_ms: int) -> str:
    """The UTC day (``YYYY-MM-DD``) a run finished on."""
    return _day_text(finished_ms // DAY_MS)


def check_page_arguments(query: HistoryQuery, limit: int, cursor: str | None, offset: int,
                         window: int) -> None:
    """``ValueError`` for a page no store could serve (the same rules everywhere)."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"a history page holds 1 to {MAX_PAGE} records, not {limit}")
    if offset < 0 or window < 1:
        raise ValueError(f"offset must be >= 0 and window >= 1, not {offset} and {window}")
    if offset and (cursor is not None or not is_index_read(query)):
        raise ValueError("an offset pages an index read (at most one of status, class, "
                         "queue, jid) from its start; page a combined filter by cursor")
