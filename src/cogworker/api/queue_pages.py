"""The queues table: every registered queue with size, latency and paused, a page at a time.

Queues are few (they are names, not jobs), so one request reads every queue's length and
oldest entry in one pipeline (:meth:`Queue.all`) and filters, sorts and pages the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from cogworker.api._source import Source
from cogworker.api.queues import Queue, QueueSummary

QueueSort = Literal["name", "size", "latency"]
QUEUE_SORTS: tuple[QueueSort, ...] = ("name", "size", "latency")

_SORT_KEYS: dict[QueueSort, Callable[[QueueSummary], Any]] = {
    "name": lambda q: q.name,
    "size": lambda q: (-q.size, q.name),
    "latency": lambda q: (-q.latency, q.name),
}


@dataclass(frozen=True)
class QueuePage:
    queues: list[QueueSummary]
    total: int
    offset: int
    limit: int
    largest_latency: float
    """The highest latency over every queue (for drawing latency bars to one scale)."""


def queue_page(source: Source, *, query: str = "", sort: QueueSort = "name",
               offset: int = 0, limit: int = 25) -> QueuePage:
    """Queues whose name contains ``query`` (case-insensitive), sorted, from ``offset``."""
    queues = Queue.all(source)
    needle = query.strip().lower()
    chosen = sorted((q for q in queues if needle in q.name.lower()), key=_SORT_KEYS[sort])
    offset, limit = max(offset, 0), max(limit, 1)
    largest = max((q.latency for q in queues), default=0.0)
    return QueuePage(chosen[offset : offset + limit], len(chosen), offset, limit, largest)
