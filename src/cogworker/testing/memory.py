"""An in-memory broker and fetcher for engine unit tests.

They keep the engine's contracts (FIFO queues, sorted sets, settle-after-run) in plain
Python structures guarded by one lock. They never stand in for Lua semantics: anything
about atomicity across processes is tested against a real Redis.
"""

from __future__ import annotations

import collections
import contextlib
import queue as queue_module
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from cogworker.core.broker import GraduationReport, SortedSetName, UnitOfWork
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


class MemoryBroker:
    """Implements :class:`cogworker.core.broker.Broker` in memory.

    ``clock`` is what lock expiry reads (testing's frozen clock in fake mode).
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.lock = threading.RLock()
        self.arrived = threading.Condition(self.lock)
        self.queues: dict[str, collections.deque[str]] = collections.defaultdict(
            collections.deque)
        self.sets: dict[str, dict[str, float]] = {"schedule": {}, "retry": {}, "dead": {}}
        self.paused: set[str] = set()
        self.processed = 0
        self.failed = 0
        self.work: dict[str, dict[str, str]] = collections.defaultdict(dict)
        self.presence: dict[str, dict[str, object]] = {}
        self.subscriptions: dict[str, list[_Subscription]] = collections.defaultdict(list)
        self.locks_held: dict[str, tuple[str, float]] = {}
        self.locks = MemoryLocks(self)

    def expire_locks(self) -> None:
        now = self.clock()
        for key in [k for k, (_, until) in self.locks_held.items() if until <= now]:
            del self.locks_held[key]

    # client side -------------------------------------------------------------------------
    def store(self, immediate: Sequence[tuple[str, str]],
              scheduled: Sequence[tuple[float, str]]) -> None:
        with self.arrived:
            for queue, raw in immediate:
                self.queues[queue].appendleft(raw)
            for at, raw in scheduled:
                self.sets["schedule"][raw] = at
            self.arrived.notify_all()

    # worker side -------------------------------------------------------------------------
    def server_time(self) -> float:
        return time.time()

    def server_version(self) -> tuple[int, ...]:
        return (7, 2)

    def paused_queues(self) -> set[str]:
        with self.lock:
            return set(self.paused)

    def file_job(self, set_name: SortedSetName, score: float, raw: str) -> None:
        with self.lock:
            self.sets[set_name][raw] = score

    def record_outcomes(self, processed: int, failed: int, now: float) -> None:
        with self.lock:
            self.processed += processed
            self.failed += failed

    def set_work(self, identity: str, tid: str, entry: str) -> None:
        with self.lock:
            self.work[identity][tid] = entry

    def clear_work(self, identity: str, tid: str) -> None:
        with self.lock:
            self.work[identity].pop(tid, None)

    def replace_work(self, identity: str, entries: Mapping[str, str], ttl: float) -> None:
        with self.lock:
            self.work[identity] = dict(entries)

    def graduate(self, set_name: Literal["schedule", "retry"], now: float,
                 limit: int) -> GraduationReport:
        report = GraduationReport()
        with self.arrived:
            due = sorted((s, r) for r, s in self.sets[set_name].items() if s <= now)[:limit]
            for _, raw in due:
                del self.sets[set_name][raw]
                try:
                    job = decode(raw)
                except PayloadError as exc:
                    self.sets["dead"][encode(unparseable_wrapper(raw, None, exc.reason, now))] = now
                    report.buried += 1
                    continue
                job["enqueued_at"] = now
                self.queues[job["queue"]].appendleft(encode(job))
                report.moved += 1
            self.arrived.notify_all()
        return report

    def beat(self, identity: str, info: str, busy: int, quiet: bool,
             queues: Sequence[str], ttl: float, reliable: bool) -> None:
        with self.lock:
            self.presence[identity] = {"info": info, "busy": busy, "quiet": quiet}

    def remove_process(self, identity: str) -> None:
        with self.lock:
            self.presence.pop(identity, None)
            self.work.pop(identity, None)

    @contextlib.contextmanager
    def subscribe_signals(self, identity: str) -> Iterator[_Subscription]:
        subscription = _Subscription()
        with self.lock:
            self.subscriptions[identity].append(subscription)
        try:
            yield subscription
        finally:
            with self.lock:
                self.subscriptions[identity].remove(subscription)

    def publish_signal(self, identity: str, message: str) -> int:
        with self.lock:
            receivers = list(self.subscriptions.get(identity, []))
        for subscription in receivers:
            subscription.messages.put(message)
        return len(receivers)

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
        self.broker.file_job(set_name, score, record)
        return True

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        return 0

    def close(self) -> None:
        return None
