"""Where the jobs of each state live, read a slice or a bounded search at a time.

Each source knows its size from the broker's counts alone and reads only the entries of
the slice asked for; searches run inside the broker (:mod:`cogworker.api.search`).
Running jobs are bounded by the fleet's thread count, so they are read whole.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from cogworker.api._source import JobRecord
from cogworker.api.job_rows import SORTED_SET_OF, JobRow, Status
from cogworker.api.search import search_windows
from cogworker.core.broker import Broker, RunningJob, SearchPage
from cogworker.core.payload import dumps


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

    def __init__(self, broker: Broker, status: Status) -> None:
        self.status = status
        self._sets = broker.sets
        self._set_name = SORTED_SET_OF[status]

    def _row(self, raw: str, score: float | None) -> JobRow:
        record = JobRecord.from_raw(raw)
        return JobRow(self.status, record, record.queue, score)

    def size(self) -> int:
        return self._sets.size(self._set_name)

    def slice(self, start: int, count: int, newest_first: bool) -> list[JobRow]:
        if count <= 0:
            return []
        page = self._sets.page(self._set_name, start, count, newest_first=newest_first)
        return [self._row(entry.raw, entry.score) for entry in page]

    def search(self, needle: str, resume: tuple[int, int], newest_first: bool, most: int,
               budget: int, deadline: float) -> Found:
        def step(start: int, limit: int, window: int) -> SearchPage:
            return self._sets.search(self._set_name, needle, start=start,
                                     newest_first=newest_first, limit=limit, window=window)

        scan = search_windows(step, start=resume[1], most=most, budget=budget,
                              deadline=deadline)
        rows = [self._row(hit.raw, hit.score) for hit in scan.hits]
        following = None if scan.next_position is None else (0, scan.next_position)
        return Found(rows, following, scan.examined)


class QueueSource:
    """Enqueued jobs: every registered queue (or one), in name order, each newest first."""

    status: Status = "enqueued"

    def __init__(self, broker: Broker, queue: str | None = None) -> None:
        self._queues = broker.queues
        records = self._queues.records(None if queue is None else [queue])
        self.queues = [record.name for record in records]
        self.sizes = [record.size for record in records]

    def size(self) -> int:
        return sum(self.sizes)

    @staticmethod
    def _rows(name: str, raws: list[str], first: int, step: int) -> list[JobRow]:
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
            raws = self._queues.page(self.queues[index], start, take,
                                     newest_first=newest_first)
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
            name, size = self.queues[part], self.sizes[part]

            def step(start: int, limit: int, window: int, name: str = name) -> SearchPage:
                return self._queues.search(name, needle, start=start,
                                           newest_first=newest_first, limit=limit,
                                           window=window)

            scan = search_windows(step, start=position, most=most - len(rows),
                                  budget=budget - examined, deadline=deadline)
            rows += [JobRow("enqueued", JobRecord.from_raw(hit.raw), name,
                            position=hit.position if newest_first else size - 1 - hit.position)
                     for hit in scan.hits]
            examined += scan.examined
            if scan.next_position is not None:
                return Found(rows, (part, scan.next_position), examined)
            part, position = part + 1, 0
        return Found(rows, (part, position) if part < len(self.queues) else None, examined)


def running_row(running: RunningJob) -> JobRow:
    """One running job as a row of the jobs table."""
    payload = dict(running.work.payload)
    record = JobRecord(dumps(payload), payload)
    return JobRow("running", record, running.work.queue or record.queue,
                  process=running.identity, thread=running.tid, run_at=running.work.run_at)


class RunningSource:
    """Jobs running now, per live process (identity order), per thread."""

    status: Status = "running"

    def __init__(self, broker: Broker) -> None:
        self._processes = broker.processes
        self._rows = [running_row(running) for running in self._processes.work()]
        self.identities = list(dict.fromkeys(row.process or "" for row in self._rows))
        self.sizes = [sum(row.process == identity for row in self._rows)
                      for identity in self.identities]

    def size(self) -> int:
        return len(self._rows)

    def rows_of(self, identity: str) -> list[JobRow]:
        """The running jobs of one process, by thread id."""
        return [row for row in self._rows if row.process == identity]

    def slice(self, start: int, count: int, newest_first: bool) -> list[JobRow]:
        ordered = self._rows if newest_first else self._by_process_reversed()
        return ordered[start : start + max(count, 0)]

    def _by_process_reversed(self) -> list[JobRow]:
        return [row for identity in reversed(self.identities)
                for row in reversed(self.rows_of(identity))]

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


def running_rows(broker: Broker, identity: str) -> list[JobRow]:
    """The jobs one process is running, by thread id (unreadable entries left out)."""
    return [running_row(running) for running in broker.processes.work(identity)]
