"""An in-memory broker and fetcher for engine unit tests (the old, partial one).

They keep the engine's contracts (FIFO queues, sorted sets, settle-after-run) in plain
Python structures guarded by one lock, behind the facets the engine reaches
(``queues``, ``sets``, ``stats``, ``processes``, ``locks``): ``queues`` and ``sets`` are
also the dicts tests look into. They never stand in for Lua semantics: anything about
atomicity across processes is tested against a real Redis. This partial broker serves the
test modes and the engine unit tests until the complete in-memory broker replaces it.
"""

from __future__ import annotations

import collections
import contextlib
import queue as queue_module
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cogworker.core.broker import (
    Broker,
    GraduatedSetName,
    GraduationReport,
    RecoveryOptions,
    RecoveryReport,
    RunningJob,
    SortedSetName,
    UnitOfWork,
    WorkRecord,
)
from cogworker.core.errors import PayloadError
from cogworker.core.payload import decode, encode, unparseable_wrapper


@dataclass
class _Subscription:
    messages: queue_module.Queue[str] = field(default_factory=queue_module.Queue)

    def get(self, timeout: float) -> str | None:
        try:
            return self.messages.get(timeout=timeout)
        except queue_module.Empty:
            return None

    def close(self) -> None:
        return None


class MemoryLocks:
    def __init__(self, broker: MemoryBroker) -> None:
        self._broker = broker

    def acquire(self, key: str, owner: str, ttl: float) -> bool:
        with self._broker.lock:
            self._broker.expire_locks()
            if key in self._broker.locks_held:
                return False
            self._broker.locks_held[key] = (owner, self._broker.clock() + ttl)
            return True

    def extend(self, key: str, owner: str, ttl: float) -> bool:
        with self._broker.lock:
            held = self._broker.locks_held.get(key)
            if held is None or held[0] != owner:
                return False
            self._broker.locks_held[key] = (owner, self._broker.clock() + ttl)
            return True

    def retake(self, key: str, owner: str, ttl: float) -> bool:
        return self.acquire(key, owner, ttl) or self.extend(key, owner, ttl)

    def release(self, key: str, owner: str) -> bool:
        with self._broker.lock:
            held = self._broker.locks_held.get(key)
            if held is None or held[0] != owner:
                return False
            del self._broker.locks_held[key]
            return True

    def owner(self, key: str) -> str | None:
        with self._broker.lock:
            self._broker.expire_locks()
            held = self._broker.locks_held.get(key)
            return held[0] if held else None


class MemoryQueues(collections.defaultdict[str, collections.deque[str]]):
    """The queues by name (the right end is the pop end), and the pushes."""

    def __init__(self, broker: MemoryBroker) -> None:
        super().__init__(collections.deque)
        self._broker = broker

    def store(self, immediate: Sequence[tuple[str, str]],
              scheduled: Sequence[tuple[float, str]]) -> None:
        with self._broker.arrived:
            for queue, raw in immediate:
                self[queue].appendleft(raw)
            for at, raw in scheduled:
                self._broker.sets["schedule"][raw] = at
            self._broker.arrived.notify_all()

    def paused(self) -> frozenset[str]:
        with self._broker.lock:
            return frozenset(self._broker.paused)


class MemorySets(dict[str, dict[str, float]]):
    """Raw → score of each set, and the writes the engine makes."""

    def __init__(self, broker: MemoryBroker) -> None:
        super().__init__(schedule={}, retry={}, dead={})
        self._broker = broker

    def file(self, set_name: SortedSetName, score: float, raw: str) -> None:
        with self._broker.lock:
            self[set_name][raw] = score

    def size(self, set_name: SortedSetName, *, max_score: float | None = None) -> int:
        with self._broker.lock:
            return sum(max_score is None or score <= max_score
                       for score in self[set_name].values())

    def graduate(self, set_name: GraduatedSetName, now: float, limit: int) -> GraduationReport:
        report = GraduationReport()
        with self._broker.arrived:
            due = sorted((s, r) for r, s in self[set_name].items() if s <= now)[:limit]
            for _, raw in due:
                del self[set_name][raw]
                try:
                    job = decode(raw)
                except PayloadError as exc:
                    self["dead"][encode(unparseable_wrapper(raw, None, exc.reason, now))] = now
                    report.buried += 1
                    continue
                job["enqueued_at"] = now
                self._broker.queues[job["queue"]].appendleft(encode(job))
                report.moved += 1
            self._broker.arrived.notify_all()
        return report


class MemoryStats:
    def __init__(self, broker: MemoryBroker) -> None:
        self._broker = broker

    def record_outcomes(self, processed: int, failed: int, now: float) -> None:
        with self._broker.lock:
            self._broker.processed += processed
            self._broker.failed += failed


class MemoryProcesses:
    def __init__(self, broker: MemoryBroker) -> None:
        self._broker = broker

    def beat(self, identity: str, info: Mapping[str, Any], busy: int, quiet: bool,
             queues: Sequence[str], ttl: float, holds_jobs: bool) -> None:
        with self._broker.lock:
            self._broker.presence[identity] = {"info": dict(info), "busy": busy,
                                               "quiet": quiet}

    def remove(self, identity: str) -> None:
        with self._broker.lock:
            self._broker.presence.pop(identity, None)
            self._broker.work.pop(identity, None)

    def set_work(self, identity: str, tid: str, work: WorkRecord) -> None:
        with self._broker.lock:
            self._broker.work[identity][tid] = work

    def clear_work(self, identity: str, tid: str) -> None:
        with self._broker.lock:
            self._broker.work[identity].pop(tid, None)

    def replace_work(self, identity: str, works: Mapping[str, WorkRecord], ttl: float) -> None:
        with self._broker.lock:
            self._broker.work[identity] = dict(works)

    def work(self, identity: str | None = None) -> list[RunningJob]:
        with self._broker.lock:
            return [RunningJob(name, tid, work)
                    for name, works in sorted(self._broker.work.items())
                    if identity is None or name == identity
                    for tid, work in sorted(works.items())]

    @contextlib.contextmanager
    def subscribe_signals(self, identity: str) -> Iterator[_Subscription]:
        subscription = _Subscription()
        with self._broker.lock:
            self._broker.subscriptions[identity].append(subscription)
        try:
            yield subscription
        finally:
            with self._broker.lock:
                self._broker.subscriptions[identity].remove(subscription)

    def signal(self, identity: str, message: str) -> int:
        with self._broker.lock:
            receivers = list(self._broker.subscriptions.get(identity, []))
        for subscription in receivers:
            subscription.messages.put(message)
        return len(receivers)


class MemoryBroker:
    """The facets of :class:`cogworker.core.broker.Broker` the engine reaches, in memory.

    ``clock`` is what lock expiry reads (testing's frozen clock in fake mode).
    """

    name = "memory"

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.lock = threading.RLock()
        self.arrived = threading.Condition(self.lock)
        self.queues = MemoryQueues(self)
        self.sets = MemorySets(self)
        self.stats = MemoryStats(self)
        self.processes = MemoryProcesses(self)
        self.paused: set[str] = set()
        self.processed = 0
        self.failed = 0
        self.work: dict[str, dict[str, WorkRecord]] = collections.defaultdict(dict)
        self.presence: dict[str, dict[str, object]] = {}
        self.subscriptions: dict[str, list[_Subscription]] = collections.defaultdict(list)
        self.locks_held: dict[str, tuple[str, float]] = {}
        self.locks = MemoryLocks(self)

    def expire_locks(self) -> None:
        now = self.clock()
        for key in [k for k, (_, until) in self.locks_held.items() if until <= now]:
            del self.locks_held[key]

    def server_time(self) -> float:
        return time.time()

    def describe(self) -> str:
        return "memory://"

    def close(self) -> None:
        return None


class MemoryFetcher:
    """Basic-fetch semantics over a :class:`MemoryBroker` (a popped job leaves the queue)."""

    name = "memory"
    reliable = False

    def __init__(self, broker: MemoryBroker) -> None:
        self.broker = broker
        self.acknowledged: list[UnitOfWork] = []
        self.given_back: list[UnitOfWork] = []

    def holds_jobs(self) -> bool:
        return False

    def fetch(self, queues: Sequence[str], timeout: float, max_jobs: int = 1) -> list[UnitOfWork]:
        deadline = time.monotonic() + timeout
        with self.broker.arrived:
            while True:
                taken = self._take(queues, max_jobs)
                remaining = deadline - time.monotonic()
                if taken or remaining <= 0:
                    return taken
                self.broker.arrived.wait(remaining)

    def _take(self, queues: Sequence[str], max_jobs: int) -> list[UnitOfWork]:
        taken: list[UnitOfWork] = []
        for name in dict.fromkeys(queues):
            pending = self.broker.queues.get(name)
            while pending and len(taken) < max_jobs:
                taken.append(UnitOfWork(name, pending.pop()))
        return taken

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        self.acknowledged.extend(works)

    def give_back(self, work: UnitOfWork) -> bool:
        with self.broker.arrived:
            self.broker.queues[work.queue].append(work.raw)
            self.given_back.append(work)
            self.broker.arrived.notify_all()
        return True

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        self.broker.sets.file(set_name, score, record)
        return True

    def park_unsettled(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                       record: str) -> bool:
        self.broker.sets.file(set_name, score, record)
        return True

    def in_progress(self) -> list[str]:
        return []

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        return 0

    def recover_orphans(self, own_identity: str, options: RecoveryOptions) -> RecoveryReport:
        return RecoveryReport(registry_read=True)

    def recover_process(self, identity: str, options: RecoveryOptions) -> RecoveryReport:
        return RecoveryReport(registry_read=True)

    def close(self) -> None:
        return None


def as_broker(broker: MemoryBroker) -> Broker:
    """This partial broker where a :class:`~cogworker.core.broker.Broker` is expected: the
    engine unit tests and the test modes reach only the facets it has."""
    return broker  # type: ignore[return-value]
