"""Finding one job again by jid, for the detail panel and for actions.

A hint makes it cheap: a sorted-set entry is read by its score (``broker.sets.by_score`` on
one score), an enqueued one around its last known position. Without a hint, or when the hint is
stale, the set or queue is searched for the jid a window at a time, newest first, for at
most :data:`LOOKUP_SECONDS`: a job further away than that is reported as not found.
"""

from __future__ import annotations

import time

from cogworker.api._source import SYNTHETIC_JID_PREFIX, JobRecord, Source, resolve_broker
from cogworker.api.job_rows import SORTED_SET_OF, STATUSES, JobRow, Status
from cogworker.api.job_sources import QueueSource, RunningSource
from cogworker.api.search import WINDOW, normalize_query, search_windows
from cogworker.api.sorted_sets import DeadSet, RetrySet, ScheduledSet, SortedEntry, SortedSet
from cogworker.core.broker import SearchPage

LOOKUP_SECONDS = 0.05
NEIGHBOURHOOD = 50
"""How far around a stale position hint an enqueued job is looked for first."""
SAME_SCORE_LIMIT = 200
"""Entries of one score read when finding an entry again by its score."""

_SETS: dict[Status, type[SortedSet]] = {
    "scheduled": ScheduledSet, "retrying": RetrySet, "dead": DeadSet}


def sorted_set(source: Source, status: Status) -> SortedSet:
    """The sorted set of ``status`` (scheduled, retrying or dead)."""
    if status not in _SETS:
        raise ValueError(f"{status!r} jobs are not kept in a sorted set; use "
                         "scheduled, retrying or dead")
    return _SETS[status](source)


def find_entry(source: Source, status: Status, jid: str,
               score: float | None = None) -> SortedEntry | None:
    """The entry with this jid in ``status``'s set; with ``score``, read by score (fast)."""
    target = sorted_set(source, status)
    sets = resolve_broker(source).sets
    set_name = SORTED_SET_OF[status]
    if score is not None:
        for item in sets.by_score(set_name, score, score, limit=SAME_SCORE_LIMIT):
            entry = target.entry(item.raw, item.score)
            if entry.jid == jid:
                return entry
    # no hint, or its score changed meanwhile
    synthetic = jid.startswith(SYNTHETIC_JID_PREFIX)  # not in the raw text: read them all
    needle = "" if synthetic else normalize_query(jid)

    def step(start: int, limit: int, window: int) -> SearchPage:
        return sets.search(set_name, needle, start=start, limit=limit, window=window)

    scan = search_windows(step, start=0, most=WINDOW if synthetic else 10, budget=2**62,
                          deadline=time.monotonic() + LOOKUP_SECONDS)
    for hit in scan.hits:
        entry = target.entry(hit.raw, hit.score or 0.0)
        if entry.jid == jid:
            return entry
    return None


def find_job(source: Source, jid: str, status: Status | None = None, *,
             queue: str | None = None, score: float | None = None,
             position: int | None = None) -> JobRow | None:
    """The job with this jid: in ``status`` only, if given, else the first state holding it.

    ``queue`` narrows an enqueued job's search to one queue; ``score`` and ``position`` are
    the hints described above.
    """
    for name in STATUSES if status is None else (status,):
        row = _find_in(source, name, jid, queue, score, position)
        if row is not None:
            return row
    return None


def _find_in(source: Source, status: Status, jid: str, queue: str | None,
             score: float | None, position: int | None) -> JobRow | None:
    if status in SORTED_SET_OF:
        entry = find_entry(source, status, jid, score)
        return None if entry is None else JobRow(status, entry, entry.queue, entry.score)
    broker = resolve_broker(source)
    if status == "running":
        running = RunningSource(broker)
        for identity in running.identities:
            row = next((row for row in running.rows_of(identity) if row.jid == jid), None)
            if row is not None:
                return row
        return None
    return _find_enqueued(source, jid, queue, position)


def _near(source: Source, jid: str, queue: str, position: int) -> JobRow | None:
    queues = resolve_broker(source).queues
    start = max(position - NEIGHBOURHOOD, 0)
    raws = queues.page(queue, start, position + NEIGHBOURHOOD - start + 1)
    for offset, raw in enumerate(raws):
        record = JobRecord.from_raw(raw)
        if record.jid == jid:
            return JobRow("enqueued", record, queue, position=start + offset)
    return None


def _find_enqueued(source: Source, jid: str, queue: str | None,
                   position: int | None) -> JobRow | None:
    if jid.startswith(SYNTHETIC_JID_PREFIX):
        return None  # workers bury unreadable queue entries in dead; none stay queued
    if queue is not None and position is not None:
        row = _near(source, jid, queue, position)
        if row is not None:
            return row
    broker = resolve_broker(source)
    queues = QueueSource(broker, queue)
    needle = normalize_query(jid)
    deadline = time.monotonic() + LOOKUP_SECONDS
    for name, size in zip(queues.queues, queues.sizes, strict=True):
        def step(start: int, limit: int, window: int, name: str = name) -> SearchPage:
            return broker.queues.search(name, needle, start=start, limit=limit, window=window)

        scan = search_windows(step, start=0, most=10, budget=size, deadline=deadline)
        for hit in scan.hits:
            row = JobRow("enqueued", JobRecord.from_raw(hit.raw), name, position=hit.position)
            if row.jid == jid:
                return row
    return None
