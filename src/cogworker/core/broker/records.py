"""Value types shared by several facets: a fetched job, set names, search pages, sightings.

Every record is immutable and holds plain values only, so a broker can build it from any
store and a caller can keep it after the call. Records of one facet only live in that
facet's module (``QueueRecord`` in :mod:`.queues`, ``LockRecord`` in :mod:`.locks`...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

SortedSetName = Literal["schedule", "retry", "dead"]
"""The three job sets: jobs due later, failed jobs waiting to retry, dead jobs."""

GraduatedSetName = Literal["schedule", "retry"]
"""The sets whose due entries move onto their queues (graduation)."""

SORTED_SET_NAMES: tuple[SortedSetName, ...] = ("schedule", "retry", "dead")

Whereabouts = Literal["running", "queued", "retrying", "scheduled", "dead"]
"""Where a job can be: held by a process, on a queue, or in one of the three sets."""


@dataclass(frozen=True, slots=True)
class UnitOfWork:
    """One fetched job: the queue name it came from and its exact raw payload."""

    queue: str
    raw: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One entry of a bounded search that contains the text looked for.

    ``position`` counts in the direction the search ran (0 = the first entry in that
    direction: the newest when searching newest first); ``score`` is the set score, None
    for a queue entry.
    """

    position: int
    raw: str
    score: float | None = None


@dataclass(frozen=True, slots=True)
class SearchPage:
    """What one bounded search call found, and where the next call goes on from.

    ``next_position`` is None when the end of the queue or set was reached, else the
    position (in the same direction) to pass as ``start`` next time. ``examined`` is how
    many entries this call looked at: never more than its ``window``, and it may be fewer
    even when the end was not reached (the call stopped at ``limit`` hits).
    """

    hits: tuple[SearchHit, ...]
    next_position: int | None
    examined: int


@dataclass(frozen=True, slots=True)
class Sighting:
    """Where one job was seen by :meth:`Broker.locate <.composite.Broker.locate>`.

    ``place`` names the spot within ``where``: the queue name (queued), the holder's
    identity (running), or the set name (retrying, scheduled, dead). ``job_class`` is the
    payload's ``class`` (``"?"`` when it has none).
    """

    where: Whereabouts
    place: str
    job_class: str


@dataclass(frozen=True, slots=True)
class LocatePage:
    """The jids found so far by one bounded locate call, and where to go on looking.

    ``cursor`` is None when every place was looked through: a jid still missing then is
    nowhere (or moved while the search ran; look again before acting on "nowhere").
    """

    found: Mapping[str, Sighting]
    cursor: str | None
