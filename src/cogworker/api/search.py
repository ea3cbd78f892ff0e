"""Searching a list or sorted set for a piece of text, window by window, inside Redis.

A search never copies a whole set into Python: ``search_window.lua`` looks at one window
of entries per call and sends back only the matches, and :func:`search_key` keeps calling
it until it has enough matches or has looked at its budget of entries. The match is a
case-insensitive (ASCII) substring of the stored job JSON: class, jid, arguments, error
message — everything the job carries.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from cogworker.api._source import BrokerLike, text

KeyKind = Literal["list", "zset"]

WINDOW = 1500
"""Entries one script call looks at (a few milliseconds of Redis time)."""
MAX_QUERY_CHARS = 200


@dataclass(frozen=True, slots=True)
class Hit:
    """One matching entry: its position (in the search direction), raw text and score."""

    position: int
    raw: str
    score: float | None


@dataclass(frozen=True, slots=True)
class Scan:
    """What one bounded search of one key found, and where to go on from."""

    hits: list[Hit]
    next_position: int | None
    """Where a later search continues; None when the end of the key was reached."""
    examined: int


def normalize_query(query: str | None) -> str:
    """The text to search for: stripped, lower-cased, cut to 200 characters ('' = none)."""
    return (query or "").strip().lower()[:MAX_QUERY_CHARS]


def search_key(broker: BrokerLike, key: str, kind: KeyKind, needle: str, *, start: int,
               newest_first: bool, most: int, budget: int,
               deadline: float | None = None) -> Scan:
    """Matches of ``needle`` in ``key`` from ``start``: at most ``most`` of them, looking at
    no more than ``budget`` entries and starting no window after ``deadline`` (a
    ``time.monotonic()`` value)."""
    hits: list[Hit] = []
    position: int | None = start
    examined = 0
    while position is not None and len(hits) < most and examined < budget:
        if deadline is not None and examined and time.monotonic() >= deadline:
            break
        window = min(WINDOW, max(budget - examined, 1))
        reply = broker.scripts.run(
            "cogworker.api", "search_window", keys=[key],
            args=[kind, position, "1" if newest_first else "0", window, needle,
                  most - len(hits)])
        following, looked_at = int(reply[0]), int(reply[1])
        for index in range(2, len(reply), 3):
            score = text(reply[index + 2])
            hits.append(Hit(int(reply[index]), text(reply[index + 1]),
                            float(score) if score else None))
        examined += looked_at
        position = following if following >= 0 else None
    return Scan(hits, position, examined)


def ascii_case_glob(needle: str) -> Iterator[str]:
    """``needle`` as a Redis glob matching any ASCII case (``ab`` -> ``[aA][bB]``)."""
    for char in needle:
        if char.isascii() and char.isalpha():
            yield f"[{char.lower()}{char.upper()}]"
        elif char in "*?[]\\":
            yield "\\" + char
        else:
            yield char
