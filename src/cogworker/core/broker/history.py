"""``broker.extension(HISTORY)``: one record per run of a job, filtered and paged by the store.

An optional facet (:class:`~cogworker.core.broker.Extension`): the ``history`` plugin writes
it, the API (:mod:`cogworker.api.history`), the CLI and the Web UI read it. A record is one
*run*: a success, or one failed attempt; a job retried twice then done leaves three records
under its jid.

Every read is bounded and answered by the store: a page is a window of an index chosen by
the query (the whole history, one status, one class, one queue or one jid, newest or
oldest first; the whole history or one class, slowest or fastest first), so the common
filters cost an index read, never a scan of the history. Any other query (two or more of
status/class/queue/jid; a duration order with a status, queue or jid but no class) walks
the smallest index that fits and checks the other conditions record by record, at most
``window`` records a call, and returns a cursor to go on from (``HistoryPage.cursor``).
Totals are exact with at most one of status/class/queue/jid (time range included), else
unknown (None) unless the walk reached the end. Writes are bookkeeping: best-effort, one
call per batch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from cogworker.core.broker.composite import Extension

RunStatus = Literal["success", "failed", "expired", "cancelled"]
"""``success`` and ``failed`` are runs; ``expired`` (dropped unrun past its ``expires_at``)
and ``cancelled`` (cancelled before it started, or stopped while running) are recorded too
when the history plugin hears of them. Only runs count in the daily success/failed
figures."""
RUN_STATUSES: Final[tuple[RunStatus, ...]] = ("success", "failed", "expired", "cancelled")
SortKey = Literal["finished_at", "duration"]
SORT_KEYS: Final[tuple[SortKey, ...]] = ("finished_at", "duration")
PAGE_WINDOW: Final = 1000
"""Records one call of a combined-filter query looks at, at most (a page of an index read
is never more than its limit)."""
MAX_PAGE: Final = 1000
"""The largest page one call returns."""
_RECORD_JSON: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
MAX_DURATION_US: Final = 9_999_999_999_999
"""Durations are indexed in whole microseconds, 13 digits (about 115 days); longer runs
are indexed as this."""


@dataclass(frozen=True, slots=True)
class HistoryRecord:
    """One run of a job. Times are epoch milliseconds, the duration whole microseconds (as
    stored and indexed, so a filter never meets a rounding difference); :attr:`finished_at`
    and :attr:`duration` give seconds. ``args`` is the JSON text of the arguments, cut to
    the plugin's ``args_max_bytes`` (``args_truncated`` then says so). ``backtrace`` is the
    failure's traceback lines (empty for a success). ``run_id`` is unique per run."""

    run_id: str
    jid: str
    job_class: str
    queue: str
    status: RunStatus
    started_ms: int
    finished_ms: int
    duration_us: int
    args: str = "[]"
    args_truncated: bool = False
    error_class: str | None = None
    error_message: str | None = None
    backtrace: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"a run's status is one of {', '.join(RUN_STATUSES)}, not "
                             f"{self.status!r}")
        for name in ("run_id", "jid", "job_class", "queue"):
            if not getattr(self, name):
                raise ValueError(f"a history record needs a {name}")
            if "\x00" in getattr(self, name):
                raise ValueError(f"a history record's {name} must not contain NUL")
        if not 0 <= self.duration_us <= MAX_DURATION_US or self.finished_ms < 0:
            raise ValueError(f"a history record's times must be >= 0 and its duration at most "
                             f"{MAX_DURATION_US} us, not finished_ms={self.finished_ms}, "
                             f"duration_us={self.duration_us}")

    @property
    def started_at(self) -> float:
        return self.started_ms / 1000

    @property
    def finished_at(self) -> float:
        return self.finished_ms / 1000

    @property
    def duration(self) -> float:
        """Seconds the run took."""
        return self.duration_us / 1_000_000

    def to_dict(self) -> dict[str, Any]:
        """The stored form (JSON-ready); :meth:`from_dict` reads it back."""
        data: dict[str, Any] = {
            "run_id": self.run_id, "jid": self.jid, "class": self.job_class,
            "queue": self.queue, "status": self.status, "started_ms": self.started_ms,
            "finished_ms": self.finished_ms, "duration_us": self.duration_us,
            "args": self.args,
        }
        if self.args_truncated:
            data["args_truncated"] = True
        if self.status != "success":  # what failed it, or why it never ran or was stopped
            data.update(error_class=self.error_class, error_message=self.error_message,
                        backtrace=list(self.backtrace))
        return data

    def to_json(self) -> str:
        return _RECORD_JSON.encode(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HistoryRecord:
        """A record from its stored form; ``ValueError`` (or ``KeyError``/``TypeError``)
        for one that is not."""
        return cls(
            run_id=str(data["run_id"]), jid=str(data["jid"]), job_class=str(data["class"]),
            queue=str(data["queue"]), status=data["status"],
            started_ms=int(data["started_ms"]), finished_ms=int(data["finished_ms"]),
            duration_us=int(data["duration_us"]), args=str(data.get("args", "[]")),
            args_truncated=bool(data.get("args_truncated", False)),
            error_class=data.get("error_class"), error_message=data.get("error_message"),
            backtrace=tuple(str(line) for line in data.get("backtrace") or ()),
        )

    @classmethod
    def from_json(cls, text: str) -> HistoryRecord | None:
        """A stored record, or None for text that is not one (a reader never raises on
        someone else's data)."""
        try:
            data = json.loads(text)
            return cls.from_dict(data) if isinstance(data, dict) else None
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    """Which records, in which order. Every condition given must hold (AND).

    ``finished_from``/``finished_to``: epoch milliseconds, both included. ``sort``: by
    ``finished_at`` or ``duration``; ``descending`` (the default) is newest or slowest
    first; ties keep no promised order.
    """

    status: RunStatus | None = None
    job_class: str | None = None
    queue: str | None = None
    jid: str | None = None
    finished_from: int | None = None
    finished_to: int | None = None
    sort: SortKey = "finished_at"
    descending: bool = True

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {', '.join(RUN_STATUSES)}, "
                             f"not {self.status!r}")
        if self.sort not in SORT_KEYS:
            raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}, not {self.sort!r}")
        for name in ("job_class", "queue", "jid"):
            if getattr(self, name) == "":
                raise ValueError(f"a {name} filter must not be empty (leave it None for all)")

    @property
    def equalities(self) -> dict[str, str]:
        """The equality conditions given, by stored field name (``class``, ``queue``...)."""
        given = {"jid": self.jid, "class": self.job_class, "queue": self.queue,
                 "status": self.status}
        return {name: value for name, value in given.items() if value is not None}

    @property
    def is_countable(self) -> bool:
        """True when the store counts the matches cheaply (at most one equality)."""
        return len(self.equalities) <= 1


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """One page: ``records`` in the query's order; ``cursor`` to pass back for the next
    page (None: nothing more); ``total``: how many records match the query, when the store
    could count them cheaply (an index read, or a walk that saw everything), else None;
    ``examined``: records looked at to find these."""

    records: list[HistoryRecord]
    cursor: str | None
    total: int | None
    examined: int = 0


@dataclass(frozen=True, slots=True)
class HistoryRetention:
    """What an append trims, in the same step: records that finished more than
    ``max_age`` seconds before the store's clock, then the oldest beyond ``max_entries``
    (every index with them); a day's counts live ``daily_ttl`` seconds after their last
    write. ``trim_limit`` bounds the records one append removes (the rest goes with the
    next ones)."""

    max_age: float
    max_entries: int
    daily_ttl: float
    trim_limit: int = 10_000

    def __post_init__(self) -> None:
        if not (self.max_age > 0 and self.max_entries >= 1 and self.daily_ttl > 0
                and self.trim_limit >= 1):
            raise ValueError(f"history retention needs max_age > 0, max_entries >= 1, "
                             f"daily_ttl > 0 and trim_limit >= 1, not {self}")


@dataclass(frozen=True, slots=True)
class DailyCount:
    """Runs that finished on one UTC day."""

    success: int = 0
    failed: int = 0


class HistoryStore(Protocol):
    """The run history of one namespace. Thread-safe.

    Every method raises :class:`~cogworker.core.errors.BrokerUnavailableError` when the
    store cannot be reached and :class:`~cogworker.core.errors.BrokerError` on any other
    failure, the driver's exception as ``__cause__``; ``ValueError`` for a bad argument.
    """

    def append(self, records: Sequence[HistoryRecord], retention: HistoryRetention) -> None:
        """Store ``records`` in every index, add them to their UTC day's counts (by
        ``finished_ms``), then trim by age and by count (see :class:`HistoryRetention`),
        all in one atomic step. A record is never changed once written: appending the same
        record again (a write retried after a lost reply) changes nothing, and a run id is
        never reused for another run. Nothing given: nothing written."""
        ...

    def page(self, query: HistoryQuery, *, limit: int, cursor: str | None = None,
             offset: int = 0, window: int = PAGE_WINDOW) -> HistoryPage:
        """Up to ``limit`` (1..:data:`MAX_PAGE`) records matching ``query``, in its order,
        starting after ``cursor`` (a previous page's) or, without one, ``offset`` records
        into the index (an index read only, see the module docstring: any other query
        pages by cursor, and an ``offset`` with it is a ``ValueError``). A walk looks at
        ``window``
        records at most per call and may return fewer than ``limit`` with a cursor: call
        again. An unreadable ``cursor`` is a ``ValueError``."""
        ...

    def count(self, query: HistoryQuery) -> int | None:
        """How many records match ``query``: exact with at most one of status, class,
        queue, jid (the time range included), None with more."""
        ...

    def daily_counts(self, days: Sequence[str]) -> dict[str, DailyCount]:
        """The counts of each day (``YYYY-MM-DD``, UTC) in ``days`` that has some (a day
        nobody recorded, or no longer kept, is left out)."""
        ...


HISTORY: Final = Extension[HistoryStore]("history", "one record per run of a job, "
                                         "filtered, sorted and paged by the store")
