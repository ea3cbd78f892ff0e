"""``broker.held`` in memory: claiming, holding and settling jobs.

Each step runs under the broker's one lock, so it is atomic within this process (what the
contract asks of a Lua script); it writes where the job goes before it drops the held raw,
as the Redis scripts do, though in memory nothing can fail in between. Recovery is in
:mod:`cogworker.testing.memory_broker.recovery`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

from cogworker.core.broker import (
    ClaimBatch,
    RecoveryOptions,
    RecoveryReport,
    Relock,
    SortedSetName,
    UnitOfWork,
)
from cogworker.testing.memory_broker import recovery
from cogworker.testing.memory_broker.payloads import requeue_queue
from cogworker.testing.memory_broker.state import (
    MemoryState,
    Unsettled,
    lock_claim,
    require_name,
    require_set,
)


def _holder(holder: str) -> str:
    return require_name(holder, "a holder (process identity)")


class MemoryHeldJobs:
    """The :class:`~cogworker.core.broker.HeldJobStore` of a memory broker."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state

    def supported(self) -> str | None:
        return None

    # claiming ------------------------------------------------------------------------------
    def claim(self, holder: str, order: Sequence[str], max_jobs: int) -> ClaimBatch:
        if max_jobs < 1:
            raise ValueError(f"claim takes max_jobs >= 1, not {max_jobs}")
        _holder(holder)
        if not order:
            return ClaimBatch((), ())
        state = self._state
        with state.lock:
            taken: list[UnitOfWork] = []
            open_queues = [name for name in dict.fromkeys(order)
                           if require_name(name, "a queue name") not in state.paused]
            for name in open_queues:
                jobs = state.queues.get(name)
                while jobs and len(taken) < max_jobs:
                    taken.append(self._hold(holder, name, jobs.pop()))
            return ClaimBatch(tuple(taken), tuple(open_queues))

    def _hold(self, holder: str, queue: str, raw: str) -> UnitOfWork:
        self._state.held.setdefault(holder, []).insert(0, raw)
        return UnitOfWork(queue, raw)

    def claim_blocking(self, holder: str, queue: str, timeout: float) -> UnitOfWork | None:
        if not timeout > 0:
            raise ValueError(f"claim_blocking waits a timeout above 0 seconds, not {timeout!r}")
        _holder(holder)
        require_name(queue, "a queue name")
        deadline = time.monotonic() + timeout
        state = self._state
        with state.arrival:
            while True:
                jobs = state.queues.get(queue)
                if jobs:
                    return self._hold(holder, queue, jobs.pop())
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                state.arrival.wait(remaining)

    def held(self, holder: str) -> list[str]:
        with self._state.lock:
            return list(self._state.held.get(_holder(holder), ()))

    # settling ------------------------------------------------------------------------------
    def release(self, holder: str, works: Sequence[UnitOfWork]) -> int:
        _holder(holder)
        state = self._state
        with state.lock:
            dropped = 0
            for work in works:
                if state.drop_held(holder, work.raw):
                    state.forget_counter(work.raw)
                    dropped += 1
            return dropped

    def return_to_queue(self, holder: str, work: UnitOfWork,
                        relock: Relock | None = None) -> bool:
        _holder(holder)
        claim = lock_claim(relock, work.raw)
        state = self._state
        with state.lock:
            if not state.is_held(holder, work.raw):
                return False
            queue = requeue_queue(work.raw)
            state.retake(claim)
            state.queue(queue).append(work.raw)
            state.drop_held(holder, work.raw)
            state.announce(queue)
            return True

    def file(self, holder: str, work: UnitOfWork, set_name: SortedSetName, score: float,
             record: str) -> bool:
        _holder(holder)
        name = require_set(set_name)
        state = self._state
        with state.lock:
            if not state.is_held(holder, work.raw):
                return False
            state.sets[name][record] = float(score)
            state.drop_held(holder, work.raw)
            state.forget_counter(work.raw)
            return True

    def park(self, holder: str, work: UnitOfWork, set_name: SortedSetName, score: float,
             record: str) -> bool:
        _holder(holder)
        name = require_set(set_name)
        state = self._state
        with state.lock:
            if not state.is_held(holder, work.raw):
                return False
            state.unsettled.append(Unsettled(name, float(score), record))
            state.drop_held(holder, work.raw)
            return True

    def hand_over(self, set_name: SortedSetName, score: float, record: str) -> None:
        name = require_set(set_name)
        with self._state.lock:
            self._state.unsettled.append(Unsettled(name, float(score), record))

    def requeue_all(self, holder: str, finished: Sequence[str], keep: Sequence[str],
                    relock: Relock | None = None) -> int:
        _holder(holder)
        state = self._state
        with state.lock:
            snapshot = list(state.held.get(holder, ()))
        claims = {raw: lock_claim(relock, raw) for raw in snapshot}
        done, kept = Counter(finished), Counter(keep)
        with state.lock:
            requeued, still_held = 0, []
            for raw in state.held.pop(holder, []):  # most recently claimed first
                if done[raw] > 0:
                    done[raw] -= 1
                    state.forget_counter(raw)
                elif kept[raw] > 0:
                    kept[raw] -= 1
                    still_held.append(raw)
                else:
                    queue = requeue_queue(raw)
                    state.retake(claims.get(raw, lock_claim(relock, raw)))
                    state.queue(queue).append(raw)
                    state.announce(queue)
                    requeued += 1
            if still_held:
                state.held[holder] = still_held
            return requeued

    # recovery ------------------------------------------------------------------------------
    def recover_orphans(self, own_identity: str, options: RecoveryOptions,
                        relock: Relock | None = None) -> RecoveryReport:
        return recovery.recover_orphans(self._state, own_identity, options, relock)

    def recover_process(self, holder: str, options: RecoveryOptions,
                        relock: Relock | None = None) -> RecoveryReport:
        return recovery.recover_process(self._state, _holder(holder), options, relock)

    def bury_repeat_orphans(self, now: float, max_orphanings: int) -> list[str]:
        return recovery.bury_repeat_orphans(self._state, now, max_orphanings)

    def file_unsettled(self) -> list[tuple[SortedSetName, str]]:
        return recovery.file_unsettled(self._state)
