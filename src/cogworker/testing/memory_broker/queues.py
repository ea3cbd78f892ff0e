"""``broker.queues`` in memory: deques with a push end (left) and a pop end (right)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from cogworker.core.broker import (
    QueueRecord,
    Relock,
    SearchPage,
    Subscription,
    UnitOfWork,
)
from cogworker.testing.memory_broker.reading import check_page, search_window
from cogworker.testing.memory_broker.state import (
    WAKEUP_CHANNEL,
    MemoryState,
    lock_claim,
    require_name,
)


def _queue_name(name: str) -> str:
    return require_name(name, "a queue name")


class MemoryQueues:
    """The :class:`~cogworker.core.broker.QueueStore` of a memory broker."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state

    # pushing -------------------------------------------------------------------------------
    def store(self, immediate: Sequence[tuple[str, str]],
              scheduled: Sequence[tuple[float, str]]) -> None:
        """Push and schedule in one step (all or nothing: names are checked first)."""
        for queue, _raw in immediate:
            _queue_name(queue)
        if not immediate and not scheduled:
            return
        state = self._state
        with state.lock:
            for queue, raw in immediate:
                state.queue(queue).appendleft(raw)
                state.registered.add(queue)
            for at, raw in scheduled:
                state.sets["schedule"][raw] = float(at)
            for queue in dict.fromkeys(queue for queue, _raw in immediate):
                state.announce(queue)

    # reading -------------------------------------------------------------------------------
    def names(self) -> list[str]:
        with self._state.lock:
            return sorted(self._state.registered)

    def records(self, names: Sequence[str] | None = None) -> list[QueueRecord]:
        state = self._state
        with state.lock:
            chosen = sorted(state.registered) if names is None else \
                [_queue_name(name) for name in names]
            records = []
            for name in chosen:
                jobs = state.queues.get(name)
                records.append(QueueRecord(name, len(jobs) if jobs else 0,
                                           jobs[-1] if jobs else None, name in state.paused))
            return records

    def size(self, queue: str) -> int:
        with self._state.lock:
            return len(self._state.queues.get(_queue_name(queue), ()))

    def _ordered(self, queue: str, newest_first: bool) -> list[str]:
        jobs = list(self._state.queues.get(_queue_name(queue), ()))
        return jobs if newest_first else jobs[::-1]

    def page(self, queue: str, start: int, count: int, *,
             newest_first: bool = True) -> list[str]:
        check_page(start, count)
        with self._state.lock:
            return self._ordered(queue, newest_first)[start:start + count]

    def search(self, queue: str, needle: str, *, start: int = 0, newest_first: bool = True,
               limit: int, window: int) -> SearchPage:
        with self._state.lock:
            entries = [(raw, None) for raw in self._ordered(queue, newest_first)]
        return search_window(entries, needle, start, limit, window)

    # changing ------------------------------------------------------------------------------
    def remove(self, queue: str, raw: str) -> int:
        with self._state.lock:
            jobs = self._state.queues.get(_queue_name(queue))
            if not jobs:
                return 0
            kept = [job for job in jobs if job != raw]
            removed = len(jobs) - len(kept)
            jobs.clear()
            jobs.extend(kept)
            return removed

    def clear(self, queue: str) -> int:
        with self._state.lock:
            jobs = self._state.queues.pop(_queue_name(queue), None)
            return len(jobs) if jobs else 0

    def pause(self, queue: str) -> bool:
        with self._state.lock:
            paused = self._state.paused
            was = _queue_name(queue) in paused
            paused.add(queue)
            return not was

    def resume(self, queue: str) -> bool:
        with self._state.lock:
            paused = self._state.paused
            was = _queue_name(queue) in paused
            paused.discard(queue)
            return was

    def paused(self) -> frozenset[str]:
        with self._state.lock:
            return frozenset(self._state.paused)

    # taking jobs ---------------------------------------------------------------------------
    def pop(self, order: Sequence[str], max_jobs: int) -> list[UnitOfWork]:
        with self._state.lock:
            return self._take(order, max_jobs)

    def _take(self, order: Sequence[str], max_jobs: int) -> list[UnitOfWork]:
        taken: list[UnitOfWork] = []
        for name in dict.fromkeys(order):
            jobs = self._state.queues.get(_queue_name(name))
            while jobs and len(taken) < max_jobs:
                taken.append(UnitOfWork(name, jobs.pop()))
        return taken

    def pop_blocking(self, order: Sequence[str], timeout: float) -> UnitOfWork | None:
        if not order:
            raise ValueError("pop_blocking needs at least one queue name to wait on")
        if not timeout > 0:
            raise ValueError(f"pop_blocking waits a timeout above 0 seconds, not {timeout!r}")
        deadline = time.monotonic() + timeout
        state = self._state
        with state.arrival:
            while True:
                taken = self._take(order, 1)
                remaining = deadline - time.monotonic()
                if taken or remaining <= 0:
                    return taken[0] if taken else None
                state.arrival.wait(remaining)

    def push_back(self, work: UnitOfWork, relock: Relock | None = None) -> None:
        claim = lock_claim(relock, work.raw)
        state = self._state
        with state.lock:
            state.retake(claim)
            state.queue(_queue_name(work.queue)).append(work.raw)
            state.announce(work.queue)

    def subscribe_wakeups(self) -> AbstractContextManager[Subscription]:
        return self._wakeups()

    @contextmanager
    def _wakeups(self) -> Iterator[Subscription]:
        with self._state.channels.subscribe(WAKEUP_CHANNEL) as subscription:
            yield subscription
