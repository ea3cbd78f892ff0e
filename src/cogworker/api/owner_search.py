"""Where a few jobs are now (running, queued, retrying, scheduled, dead), found a bounded
slice of work at a time.

The Locks tab asks this for the owners of one page of locks. :meth:`Broker.locate
<cogworker.core.broker.Broker.locate>` reads the running jobs first, whole, then one
window per step of the queues and the retry, schedule and dead sets; this module calls it
step after step for at most :data:`LOCATE_SECONDS` per call of :func:`locate`. What was not
found yet comes back with a cursor; a jid still missing when the cursor is None is nowhere.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from cogworker.api._source import Source, resolve_broker
from cogworker.core.broker import Sighting

LOCATE_SECONDS = 0.05


@dataclass(frozen=True)
class Located:
    """Where the jobs found so far are, and where to go on looking (None: nowhere left)."""

    found: dict[str, Sighting]
    cursor: str | None


def locate(source: Source, jids: Iterable[str], cursor: str | None = None,
           seconds: float = LOCATE_SECONDS) -> Located:
    """Look for ``jids`` from ``cursor`` on (None: from the start, running jobs first);
    one step at least, then more while ``seconds`` last."""
    broker = resolve_broker(source)
    wanted = set(jids)
    found: dict[str, Sighting] = {}
    deadline = time.monotonic() + seconds
    while True:
        page = broker.locate(wanted - found.keys(), cursor)
        for jid, seen in page.found.items():
            found.setdefault(jid, seen)
        cursor = page.cursor
        if cursor is None or len(found) == len(wanted) or time.monotonic() >= deadline:
            return Located(found, cursor)
