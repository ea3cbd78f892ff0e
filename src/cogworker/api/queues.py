"""One queue: size, latency, its jobs, delete, clear, pause and resume (``broker.queues``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cogworker.api._source import (
    PAGE_SIZE,
    SYNTHETIC_JID_PREFIX,
    JobRecord,
    Source,
    resolve_broker,
)
from cogworker.api.search import WINDOW, normalize_query
from cogworker.core.payload import DEFAULT_QUEUE


@dataclass(frozen=True)
class QueueSummary:
    """A queue as ``cogworker queues`` lists it."""

    name: str
    size: int
    latency: float
    paused: bool

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "latency": self.latency,
                "paused": self.paused}


def latency_of(raw: str | None, now: float) -> float:
    """Seconds since the job in ``raw`` was enqueued (else created); 0 when unknown."""
    if raw is None:
        return 0.0
    record = JobRecord.from_raw(raw)
    stamp = record.get("enqueued_at")
    if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
        stamp = record.get("created_at")
    if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
        return 0.0
    return max(now - float(stamp), 0.0)


class Queue:
    """A queue by name. Jobs are pushed on one end and taken from the other (FIFO).

    ::

        queue = Queue(app, "mail")
        queue.size(), queue.latency()
        for record in queue:            # newest first
            if record.klass == "Obsolete":
                queue.delete(record.value)
    """

    def __init__(self, source: Source, name: str = DEFAULT_QUEUE) -> None:
        if not name:
            raise ValueError("a queue name must not be empty")
        self._queues = resolve_broker(source).queues
        self.name = name

    def __repr__(self) -> str:
        return f"Queue({self.name!r})"

    @classmethod
    def all(cls, source: Source) -> list[QueueSummary]:
        """Every registered queue with size, latency and paused, by name."""
        records = resolve_broker(source).queues.records()
        now = time.time()
        return [QueueSummary(record.name, record.size, latency_of(record.oldest, now),
                             record.paused) for record in records]

    def size(self) -> int:
        """How many jobs wait on this queue."""
        return self._queues.size(self.name)

    def latency(self) -> float:
        """Age in seconds of the next job to run (0 when empty; never negative)."""
        [record] = self._queues.records([self.name])
        return latency_of(record.oldest, time.time())

    def __iter__(self) -> Iterator[JobRecord]:
        """The jobs, newest first, read 50 at a time (the queue may change meanwhile)."""
        start = 0
        while True:
            page = self._queues.page(self.name, start, PAGE_SIZE)
            yield from (JobRecord.from_raw(raw) for raw in page)
            if len(page) < PAGE_SIZE:
                return
            start += PAGE_SIZE

    def jobs(self, offset: int = 0, limit: int = PAGE_SIZE) -> list[JobRecord]:
        """Up to ``limit`` jobs in the order workers will take them (the next one first),
        skipping the first ``offset`` (``cogworker queues show`` pages with this)."""
        if offset < 0 or limit < 1:
            raise ValueError("offset must be >= 0 and limit >= 1")
        page = self._queues.page(self.name, offset, limit, newest_first=False)
        return [JobRecord.from_raw(raw) for raw in page]

    def find(self, jid: str) -> JobRecord | None:
        """The first job with this jid (newest first), or None. Searched inside the
        broker, a window at a time."""
        # a stand-in jid is in no raw text: every entry is a candidate
        needle = "" if jid.startswith(SYNTHETIC_JID_PREFIX) else normalize_query(jid)
        position: int | None = 0
        while position is not None:
            found = self._queues.search(self.name, needle, start=position, limit=50,
                                        window=WINDOW)
            for hit in found.hits:
                record = JobRecord.from_raw(hit.raw)
                if record.jid == jid:
                    return record
            position = found.next_position
        return None

    def delete(self, raw: str) -> int:
        """Remove every occurrence of this exact raw payload; returns how many."""
        return self._queues.remove(self.name, raw)

    def clear(self) -> int:
        """Delete every job of the queue in one step; returns how many it held."""
        return self._queues.clear(self.name)

    def pause(self) -> None:
        """Workers skip this queue until :meth:`resume` (they re-read it on every fetch)."""
        self._queues.pause(self.name)

    def resume(self) -> None:
        self._queues.resume(self.name)

    @property
    def paused(self) -> bool:
        """Whether workers currently skip this queue (read afresh each time)."""
        return self.name in self._queues.paused()
