"""Where the jobs of each state live, read a slice or a bounded search at a time.

Each source knows its size from ``LLEN``/``ZCARD``/``HLEN`` alone and reads only the
entries of the slice asked for; searches run inside Redis (:mod:`cogworker.api.search`).
Running jobs are bounded by the fleet's thread count, so they are read per process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from cogworker.api._source import BrokerLike, JobRecord, text
from cogworker.api.job_rows import SORTED_SET_OF, JobRow, Status
from cogworker.api.processes import _work_from_json
from cogworker.api.search import search_key
from cogworker.core.payload import dumps
from cogworker.redis.errors import translate_errors


@dataclass(frozen=True, slots=True)
class Found:
    """What one bounded search of a source found; ``resume`` = (part, position) or None."""

    rows: list[JobRow]
    resume: tuple[int, int] | None
    examined: int


class JobSource(Protocol):
    """The jobs of one state."""

    status: Status

    def size(self) -> int: ...

    def slice(self, start: int, count: int, newest_first: bool) -> list[JobRow]: ...

    def search(self, needle: str, resume: tuple[int, int], newest_first: bool, most: int,
               budget: int, deadline: float) -> Found: ...


class SortedSetSource:
    """Scheduled, retrying or dead jobs: one sorted set, ordered by score."""

    def __init__(self, broker: BrokerLike, status: Status) -> None:
        self.status = status
        self._broker = broker
        self._key = broker.keys.sorted_set(SORTED_SET_OF[status])

    def _row(self, raw: bytes | str, score: float | None) -> JobRow:
        record = JobRecord.from_raw(raw)
        return JobRow(self.status, record, record.queue, score)

    def size(self) -> int:
        with translate_errors():
            return int(self._broker.client.zcard(self._key))

    def slice(self, start: int, count: int, newest_first: bool) -> list[JobRow]:
        if count <= 0:
            return []
        read = self._broker.client.zrevrange if newest_first else self._broker.client.zrange
        with translate_errors():
            reply: Any = read(self._key, start, start + count - 1, withscores=True)
        return [self._row(raw, float(score)) for raw, score in reply]

    def search(self, needle: str, resume: tuple[int, int], newest_first: bool, most: int,
               budget: int, deadline: float) -> Found:
        scan = search_key(self._broker, self._key, "zset", needle, start=resume[1],
                          newest_first=newest_first, most=most, budget=budget,
                          deadline=deadline)
        rows = [self._row(hit.raw, hit.score) for hit in scan.hits]
        following = None if scan.next_position is None else (0, scan.next_position)
        return Found(rows, following, scan.examined)


class QueueSource:
    """Enqueued jobs: every registered queue (or one), in name order, each newest first."""

    status: Status = "enqueued"

    def __init__(self, broker: BrokerLike, queue: str | None = None) -> None:
        self._broker = broker
        keys = broker.keys
        with translate_errors():
            names = sorted(text(name) for name in broker.client.smembers(keys.queues))
        self.queues = [queue] if queue is not None else names
        with translate_errors():
            pipe = broker.client.pipeline(transaction=False)
            for name in self.queues:
                pipe.llen(keys.queue(name))
            self.sizes = [int(size) for size in pipe.execute()] if self.queues else []

    def size(self) -> int:
        return sum(self.sizes)

    @staticmethod
    def _rows(name: str, raws: list[bytes | str], first: int, step: int) -> list[JobRow]:
        return [JobRow("enqueued", JobRecord.from_raw(raw), name, position=first + step * i)
                for i, raw in enumerate(raws)]

    def slice(self, start: int, count: int, newest_first: bool) -> list[JobRow]:
        rows: list[JobRow] = []
        for index in range(len(self.queues)):
            size = self.sizes[index]
            if start >= size:
                start -= size
                continue
            take = min(count - len(rows), size - start)
            key = self._broker.keys.queue(self.queues[index])
            with translate_errors():
                if newest_first:
                    raws = self._broker.client.lrange(key, start, start + take - 1)
                else:
                    raws = self._broker.client.lrange(key, -(start + take), -(start + 1))[::-1]
            first, step = (start, 1) if newest_first else (size - 1 - start, -1)
            rows += self._rows(self.queues[index], raws, first, step)
            start = 0
            if len(rows) >= count:
                break
        return rows

    def search(self, needle: str, resume: tuple[int, int], newest_first: bool, most: int,
               budget: int, deadline: float) -> Found:
        rows: list[JobRow] = []
        part, position = resume
        examined = 0
        while part < len(self.queues) and len(rows) < most and examined < budget:
            if examined and time.monotonic() >= deadline:
                return Found(rows, (part, position), examined)
            name = self.queues[part]
            scan = search_key(self._broker, self._broker.keys.queue(name), "list", needle,
                              start=position, newest_first=newest_first,
                              most=most - len(rows), budget=budget - examined,
                              deadline=deadline)
            size = self.sizes[part]
            rows += [JobRow("enqueued", JobRecord.from_raw(hit.raw), name,
                            position=hit.position if newest_first else size - 1 - hit.position)
                     for hit in scan.hits]
            examined += scan.examined
            if scan.next_position is not None:
                return Found(rows, (part, scan.next_position), examined)
            part, position = part + 1, 0
        return Found(rows, (part, position) if part < len(self.queues) else None, examined)


class RunningSource:
    """Jobs running now, per live process (identity order), per thread."""

    status: Status = "running"

    def __init__(self, broker: BrokerLike) -> None:
        self._broker = broker
        keys = broker.keys
        with translate_errors():
            identities = sorted(text(m) for m in broker.client.smembers(keys.processes))
            pipe = broker.client.pipeline(transaction=False)
            for identity in identities:
                pipe.exists(keys.process(identity))
                pipe.hlen(keys.workers(identity))
            replies = pipe.execute() if identities else []
        live = [(identity, int(replies[2 * i + 1])) for i, identity in enumerate(identities)
                if replies[2 * i]]
        self.identities = [identity for identity, _ in live]
        self.sizes = [size for _, size in live]

    def size(self) -> int:
        return sum(self.sizes)

    def rows_of(self, identity: str) -> list[JobRow]:
        """The running jobs of one process, by thread id."""
        return running_rows(self._broker, identity)

    def slice(self, start: int, count: int, newest_first: bool) -> list[JobRow]:
        rows: list[JobRow] = []
        order = list(zip(self.identities, self.sizes, strict=True))
        for identity, size in order if newest_first else order[::-1]:
            if start >= size:
                start -= size
                continue
            own = self.rows_of(identity)
            own = own if newest_first else own[::-1]
            rows += own[start : start + count - len(rows)]
            start = 0
            if len(rows) >= count:
                break
        return rows

    def search(self, needle: str, resume: tuple[int, int], newest_first: bool, most: int,
               budget: int, deadline: float) -> Found:
        del budget, deadline  # bounded by the fleet's thread count
        matches = [row for row in self.slice(0, self.size(), newest_first)
                   if needle in f"{row.process} {row.raw}".lower()]
        start = resume[1]
        chosen = matches[start : start + most]
        following = start + len(chosen)
        return Found(chosen, (0, following) if following < len(matches) else None,
                     self.size())


def running_rows(broker: BrokerLike, identity: str) -> list[JobRow]:
    """The jobs one process is running, by thread id (unreadable entries left out)."""
    with translate_errors():
        fields = broker.client.hgetall(broker.keys.workers(identity))
    rows = []
    for tid, raw in sorted(fields.items()):
        work = _work_from_json(text(raw))
        if work is None:
            continue
        record = JobRecord(dumps(work.job), work.job)
        rows.append(JobRow("running", record, work.queue or record.queue,
                           process=identity, thread=text(tid), run_at=work.run_at))
    return rows
