"""Where a few jobs are now (running, queued, retrying, scheduled, dead), found a bounded
slice of work at a time.

The Locks tab asks this for the owners of one page of locks. Running jobs (bounded by the
fleet's threads) are read first and whole; queues and the retry, schedule and dead sets
follow, a window per script call (``match_jids.lua``), for at most :data:`LOCATE_SECONDS`
per call of :func:`locate`. What was not found yet comes back with a cursor; a jid still
missing when the cursor is None is nowhere.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cogworker.api._source import BrokerLike, JobRecord, text
from cogworker.api.job_sources import running_rows
from cogworker.plugins.unique_whereabouts import (
    DEAD,
    QUEUED,
    RETRYING,
    RUNNING,
    SCHEDULED,
    Sighting,
)
from cogworker.redis.errors import translate_errors

if TYPE_CHECKING:
    from cogworker.app import App

LOCATE_SECONDS = 0.05
WINDOW = 2000


@dataclass(frozen=True)
class Located:
    """Where the jobs found so far are, and where to go on looking (None: nowhere left)."""

    found: dict[str, Sighting]
    cursor: str | None


def _places(broker: BrokerLike) -> list[tuple[str, str, str]]:
    """(where, key, kind) of every list and sorted set a job can wait in, in search order."""
    keys = broker.keys
    with translate_errors():
        queues = sorted(text(name) for name in broker.client.smembers(keys.queues))
    places = [(QUEUED, keys.queue(name), "list") for name in queues]
    places += [(RETRYING, keys.retry, "zset"), (SCHEDULED, keys.schedule, "zset"),
               (DEAD, keys.dead, "zset")]
    return places


def _running(broker: BrokerLike, wanted: set[str]) -> dict[str, Sighting]:
    keys = broker.keys
    found: dict[str, Sighting] = {}
    with translate_errors():
        processes = sorted(text(m) for m in broker.client.smembers(keys.processes))
        identities = sorted(text(m) for m in broker.client.smembers(keys.inprogress_identities))
        pipe = broker.client.pipeline(transaction=False)
        for identity in identities:
            pipe.lrange(keys.inprogress(identity), 0, -1)
        lists = pipe.execute() if identities else []
    records = [JobRecord.from_raw(raw) for entries in lists for raw in entries]
    records += [row.record for identity in processes for row in running_rows(broker, identity)]
    for record in records:
        if record.jid in wanted:
            found.setdefault(record.jid, Sighting(RUNNING, record.klass))
    return found


def _parse(cursor: str | None) -> tuple[int, int] | None:
    try:
        place, position = (int(part) for part in (cursor or "").split("."))
    except ValueError:
        return None
    return (place, position) if place >= 0 and position >= 0 else None


def locate(app: App, jids: Iterable[str], cursor: str | None = None,
           seconds: float = LOCATE_SECONDS) -> Located:
    """Look for ``jids`` from ``cursor`` on (None: from the start, running jobs first)."""
    broker = app.broker
    wanted = set(jids)
    resume = _parse(cursor)
    found = _running(broker, wanted) if resume is None else {}
    place, position = resume or (0, 0)
    places = _places(broker)
    deadline = time.monotonic() + seconds
    windows = 0
    while place < len(places) and len(found) < len(wanted):
        if windows and time.monotonic() >= deadline:  # one window at least, then the clock
            return Located(found, f"{place}.{position}")
        windows += 1
        where, key, kind = places[place]
        missing = sorted(wanted - found.keys())
        reply = broker.scripts.run("cogworker.api", "match_jids", keys=[key],
                                   args=[kind, position, WINDOW, *missing])
        for raw in reply[1:]:
            record = JobRecord.from_raw(raw)
            if record.jid in wanted:
                found.setdefault(record.jid, Sighting(where, record.klass))
        following = int(reply[0])
        place, position = (place, following) if following >= 0 else (place + 1, 0)
    return Located(found, None)
