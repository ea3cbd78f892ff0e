"""One table over every job — running, enqueued, retrying, scheduled, dead — a page at a time.

Nothing here reads a whole set: counts come from ``LLEN``/``ZCARD``/``HLEN``, a page reads
only its own entries, and a search looks through a bounded number of entries inside Redis,
returning a cursor to go on from. The "all" view lists the states one after another in
:data:`~cogworker.api.job_rows.STATUSES` order (where a job is in its life), each in its own
order: newest first by default (most recently pushed, latest due, most recently dead).

::

    from cogworker.api.job_pages import list_jobs, search_jobs

    page = list_jobs(app, status="dead", offset=0, limit=25)
    hits = search_jobs(app, "Timeout", status="retrying")
    more = search_jobs(app, "Timeout", status="retrying", cursor=hits.next_cursor)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from cogworker.api._source import Source, resolve_broker
from cogworker.api.job_rows import SORTED_SET_OF, STATUSES, JobRow, Status
from cogworker.api.job_sources import JobSource, QueueSource, RunningSource, SortedSetSource
from cogworker.api.search import normalize_query

SEARCH_BUDGET = 200_000
"""Entries one search request looks through at most before it hands back a cursor."""
SEARCH_SECONDS = 0.05
"""How long one search request keeps looking (inside Redis, a window at a time) before it
hands back a cursor: searching 100,000 jobs takes a few requests, each answering fast."""
MAX_LIMIT = 200


@dataclass(frozen=True)
class JobCounts:
    """How many jobs are in each state right now (each count one Redis read)."""

    running: int
    enqueued: int
    retrying: int
    scheduled: int
    dead: int

    def of(self, status: Status) -> int:
        return int(getattr(self, status))

    @property
    def total(self) -> int:
        return sum(self.of(status) for status in STATUSES)


@dataclass(frozen=True)
class JobPage:
    """One page of the jobs table.

    Without a search ``total`` is exact for the scope (status and queue) and ``offset``
    says where the page starts. With a search, ``total`` is None (counting every match
    would read every entry): ``next_cursor`` continues it, and ``examined`` says how many
    entries this request looked through.
    """

    rows: list[JobRow]
    counts: JobCounts
    status: Status | None
    queue: str | None
    offset: int = 0
    limit: int = 25
    total: int | None = None
    query: str = ""
    next_cursor: str | None = None
    examined: int = 0
    """With a search: how many entries it has looked through so far (this request and the
    ones before it on the same cursor)."""
    scope_size: int = field(default=0)
    """How many jobs the scope holds (what a search looks through)."""


def _sources(source: Source, status: Status | None, queue: str | None) -> list[JobSource]:
    broker = resolve_broker(source)
    built: dict[Status, JobSource] = {
        "running": RunningSource(broker),
        "enqueued": QueueSource(broker, queue),
        **{name: SortedSetSource(broker, name) for name in SORTED_SET_OF},
    }
    if queue is not None and status is None:
        status = "enqueued"
    return [built[name] for name in STATUSES if status is None or name == status]


def _counts_of(sources: list[JobSource], source: Source) -> JobCounts:
    sizes = {item.status: item.size() for item in sources}
    missing = [name for name in STATUSES if name not in sizes]
    if missing:
        sizes.update({item.status: item.size() for item in _sources(source, None, None)
                      if item.status in missing})
    return JobCounts(**sizes)


def _clamp(limit: int) -> int:
    return max(1, min(limit, MAX_LIMIT))


def job_counts(source: Source) -> JobCounts:
    """The number of jobs in each state."""
    return _counts_of(_sources(source, None, None), source)


def list_jobs(source: Source, *, status: Status | None = None, queue: str | None = None,
              offset: int = 0, limit: int = 25, newest_first: bool = True) -> JobPage:
    """The page of jobs starting at ``offset`` (``status`` None: every state in turn)."""
    limit, offset = _clamp(limit), max(offset, 0)
    sources = _sources(source, status, queue)
    rows: list[JobRow] = []
    start = offset
    for item in sources:
        size = item.size()
        if start >= size:
            start -= size
            continue
        rows += item.slice(start, limit - len(rows), newest_first)
        start = 0
        if len(rows) >= limit:
            break
    total = sum(item.size() for item in sources)
    return JobPage(rows, _counts_of(sources, source), status, queue, offset, limit, total,
                   scope_size=total)


def _parse_cursor(cursor: str | None, parts: int) -> tuple[int, int, int, int]:
    """``"part.sub.position.searched"`` back to numbers; anything malformed starts anew."""
    try:
        part, sub, position, searched = (int(piece) for piece in (cursor or "").split("."))
    except ValueError:
        return 0, 0, 0, 0
    if not 0 <= part < parts or min(sub, position, searched) < 0:
        return 0, 0, 0, 0
    return part, sub, position, searched


def search_jobs(source: Source, query: str, *, status: Status | None = None,
                queue: str | None = None, cursor: str | None = None, limit: int = 25,
                newest_first: bool = True, budget: int = SEARCH_BUDGET,
                seconds: float = SEARCH_SECONDS) -> JobPage:
    """Jobs whose stored JSON contains ``query`` (case-insensitive), from ``cursor`` on,
    looking through at most ``budget`` entries for about ``seconds``."""
    needle = normalize_query(query)
    limit = _clamp(limit)
    sources = _sources(source, status, queue)
    if not needle:
        return list_jobs(source, status=status, queue=queue, limit=limit,
                         newest_first=newest_first)
    part, sub, position, searched = _parse_cursor(cursor, len(sources))
    deadline = time.monotonic() + seconds
    rows: list[JobRow] = []
    examined = 0
    next_cursor: str | None = None
    while part < len(sources):
        found = sources[part].search(needle, (sub, position), newest_first, limit - len(rows),
                                     budget - examined, deadline)
        rows += found.rows
        examined += found.examined
        if found.resume is not None:
            next_cursor = f"{part}.{found.resume[0]}.{found.resume[1]}.{searched + examined}"
            break
        part, sub, position = part + 1, 0, 0
        if len(rows) >= limit or examined >= budget or time.monotonic() >= deadline:
            if part < len(sources):
                next_cursor = f"{part}.0.0.{searched + examined}"
            break
    return JobPage(rows, _counts_of(sources, source), status, queue, 0, limit, None, needle,
                   next_cursor, searched + examined, sum(item.size() for item in sources))
