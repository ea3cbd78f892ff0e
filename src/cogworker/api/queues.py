"""One queue (a Redis list): size, latency, its jobs, delete, clear, pause and resume."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cogworker.api._source import PAGE_SIZE, JobRecord, Source, resolve_broker, text
from cogworker.core.payload import DEFAULT_QUEUE
from cogworker.redis.errors import translate_errors


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


def latency_of(raw: bytes | str | None, now: float) -> float:
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
    """A queue by name. Jobs are pushed on the left and taken from the right (FIFO).

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
        self._broker = resolve_broker(source)
        self.name = name
        self.key = self._broker.keys.queue(name)

    def __repr__(self) -> str:
        return f"Queue({self.name!r})"

    @classmethod
    def all(cls, source: Source) -> list[QueueSummary]:
        """Every registered queue (the ``queues`` set) with size, latency and paused, by name."""
        broker = resolve_broker(source)
        keys = broker.keys
        with translate_errors():
            names = sorted(text(name) for name in broker.client.smembers(keys.queues))
            paused = {text(name) for name in broker.client.smembers(keys.paused_queues)}
            pipe = broker.client.pipeline(transaction=False)
            for name in names:
                pipe.llen(keys.queue(name))
                pipe.lindex(keys.queue(name), -1)
            replies = pipe.execute()
        now = time.time()
        return [
            QueueSummary(name, int(replies[2 * i]), latency_of(replies[2 * i + 1], now),
                         name in paused)
            for i, name in enumerate(names)
        ]

    def size(self) -> int:
        """How many jobs wait on this queue."""
        with translate_errors():
            return int(self._broker.client.llen(self.key))

    def latency(self) -> float:
        """Age in seconds of the next job to run (0 when empty; never negative)."""
        with translate_errors():
            oldest = self._broker.client.lindex(self.key, -1)
        return latency_of(oldest, time.time())

    def __iter__(self) -> Iterator[JobRecord]:
        """The jobs, newest first, read 50 at a time (the list may change meanwhile)."""
        start = 0
        while True:
            with translate_errors():
                page = self._broker.client.lrange(self.key, start, start + PAGE_SIZE - 1)
            yield from (JobRecord.from_raw(raw) for raw in page)
            if len(page) < PAGE_SIZE:
                return
            start += PAGE_SIZE

    def jobs(self, offset: int = 0, limit: int = PAGE_SIZE) -> list[JobRecord]:
        """Up to ``limit`` jobs in the order workers will take them (the next one first),
        skipping the first ``offset`` (``cogworker queues show`` pages with this)."""
        if offset < 0 or limit < 1:
            raise ValueError("offset must be >= 0 and limit >= 1")
        with translate_errors():
            page = self._broker.client.lrange(self.key, -(offset + limit), -(offset + 1))
        return [JobRecord.from_raw(raw) for raw in reversed(page)]

    def find(self, jid: str) -> JobRecord | None:
        """The first job with this jid, or None."""
        return next((record for record in self if record.jid == jid), None)

    def delete(self, raw: str) -> int:
        """Remove every occurrence of this exact raw payload; returns how many."""
        with translate_errors():
            return int(self._broker.client.lrem(self.key, 0, raw))

    def clear(self) -> int:
        """Delete the whole queue in one step; returns how many jobs it held."""
        with translate_errors():
            pipe = self._broker.client.pipeline(transaction=True)
            pipe.llen(self.key)
            pipe.delete(self.key)
            return int(pipe.execute()[0])

    def pause(self) -> None:
        """Workers skip this queue until :meth:`resume` (they re-read it on every fetch)."""
        with translate_errors():
            self._broker.client.sadd(self._broker.keys.paused_queues, self.name)

    def resume(self) -> None:
        with translate_errors():
            self._broker.client.srem(self._broker.keys.paused_queues, self.name)

    @property
    def paused(self) -> bool:
        """Whether workers currently skip this queue (read from Redis each time)."""
        with translate_errors():
            return bool(self._broker.client.sismember(self._broker.keys.paused_queues,
                                                      self.name))
