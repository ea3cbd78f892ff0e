"""Searching a queue or a set for a piece of text, window by window, inside the broker.

A search never copies a whole set into Python: each broker call
(``broker.queues.search``, ``broker.sets.search``) looks at one window of entries and sends
back only the matches, and :func:`search_windows` keeps calling it until it has enough
matches, has looked at its budget of entries, or its time is up. The match is a
case-insensitive (ASCII) substring of the stored job JSON: class, jid, arguments, error
message — everything the job carries.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cogworker.core.broker import SearchHit, SearchPage

WINDOW = 1500
"""Entries one broker call looks at (a few milliseconds of Redis time)."""
MAX_QUERY_CHARS = 200

SearchStep = Callable[[int, int, int], SearchPage]
"""``step(start, limit, window)``: one bounded search call of the broker."""


@dataclass(frozen=True, slots=True)
class Scan:
    """What one bounded search of one queue or set found, and where to go on from."""

    hits: list[SearchHit]
    next_position: int | None
    """Where a later search continues; None when the end was reached."""
    examined: int


def normalize_query(query: str | None) -> str:
    """The text to search for: stripped, lower-cased, cut to 200 characters ('' = none)."""
    return (query or "").strip().lower()[:MAX_QUERY_CHARS]


def search_windows(step: SearchStep, *, start: int, most: int, budget: int,
                   deadline: float | None = None) -> Scan:
    """Matches from ``start``: at most ``most`` of them, looking at no more than ``budget``
    entries and starting no window after ``deadline`` (a ``time.monotonic()`` value)."""
    hits: list[SearchHit] = []
    position: int | None = start
    examined = 0
    while position is not None and len(hits) < most and examined < budget:
        if deadline is not None and examined and time.monotonic() >= deadline:
            break
        window = min(WINDOW, max(budget - examined, 1))
        page = step(position, most - len(hits), window)
        hits.extend(page.hits)
        examined += page.examined
        position = page.next_position
    return Scan(hits, position, examined)
