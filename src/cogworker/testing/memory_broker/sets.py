"""``broker.sets`` in memory: the schedule, retry and dead sets as raw → score mappings.

Entries are ordered by score, then by their bytes (as Redis orders the members of one
score); "newest first" is exactly the reverse. The dead set is capped on every
:meth:`MemoryJobSets.file` into it, by age on the broker's clock and by count.
"""

from __future__ import annotations

import logging

from cogworker.core.broker import (
    GraduatedSetName,
    GraduationReport,
    SearchPage,
    SetEntry,
    SortedSetName,
)
from cogworker.core.errors import PayloadError
from cogworker.core.payload import decode, dumps, encode, unparseable_wrapper
from cogworker.testing.memory_broker.reading import ascending, check_page, search_window
from cogworker.testing.memory_broker.state import MemoryState, require_name, require_set

logger = logging.getLogger(__name__)


class MemoryJobSets:
    """The :class:`~cogworker.core.broker.JobSets` of a memory broker."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state

    def _ascending(self, set_name: SortedSetName) -> list[tuple[str, float]]:
        return ascending(self._state.sets[require_set(set_name)])

    def _ordered(self, set_name: SortedSetName, newest_first: bool) -> list[tuple[str, float]]:
        entries = self._ascending(set_name)
        return entries[::-1] if newest_first else entries

    # writing -------------------------------------------------------------------------------
    def file(self, set_name: SortedSetName, score: float, raw: str) -> None:
        state = self._state
        with state.lock:
            state.sets[require_set(set_name)][raw] = float(score)
            if set_name == "dead":
                self._cap_dead()

    def _cap_dead(self) -> None:
        state = self._state
        dead = state.sets["dead"]
        oldest_kept = state.now() - state.dead_timeout
        for raw in [raw for raw, score in dead.items() if score < oldest_kept]:
            del dead[raw]
        excess = len(dead) - state.dead_max_jobs
        if excess > 0:
            for raw, _score in ascending(dead)[:excess]:
                del dead[raw]

    def graduate(self, set_name: GraduatedSetName, now: float, limit: int) -> GraduationReport:
        report = GraduationReport()
        if require_set(set_name) == "dead":
            raise ValueError("only the schedule and retry sets graduate, not dead")
        if limit < 1:
            return report
        with self._state.lock:
            due = [raw for raw, score in self._ascending(set_name) if score <= now][:limit]
        for raw in due:
            outcome = self._graduate_one(set_name, raw, now)
            report.moved += outcome == "moved"
            report.buried += outcome == "buried"
        return report

    def _graduate_one(self, set_name: SortedSetName, raw: str, now: float) -> str:
        try:
            job = decode(raw)
            job["enqueued_at"] = now
            new_raw = encode(job)
        except PayloadError as exc:
            return "buried" if self._bury(set_name, raw, exc.reason, now) else "gone"
        except (TypeError, ValueError) as exc:  # e.g. a NaN that cannot be encoded again
            reason = f"cannot be stored again: {exc}"
            return "buried" if self._bury(set_name, raw, reason, now) else "gone"
        return "moved" if self.requeue(set_name, raw, new_raw, job["queue"]) else "gone"

    def _bury(self, set_name: SortedSetName, raw: str, reason: str, now: float) -> bool:
        wrapper = dumps(unparseable_wrapper(raw, None, reason, now))
        state = self._state
        with state.lock:
            if state.sets[set_name].pop(raw, None) is None:
                return False
            state.sets["dead"][wrapper] = float(now)
            state.count_outcomes(0, 1, now)
        logger.error("unparseable entry in %s moved to dead: %.200s (%s)", set_name, raw, reason)
        return True

    def requeue(self, set_name: SortedSetName, raw: str, new_raw: str, queue: str) -> bool:
        require_name(queue, "a queue name")
        state = self._state
        with state.lock:
            entries = state.sets[require_set(set_name)]
            if raw not in entries:
                return False
            state.queue(queue).appendleft(new_raw)
            state.registered.add(queue)
            del entries[raw]
            state.announce(queue)
            return True

    def reschedule(self, set_name: SortedSetName, raw: str, score: float) -> bool:
        with self._state.lock:
            entries = self._state.sets[require_set(set_name)]
            if raw not in entries:
                return False
            entries[raw] = float(score)
            return True

    def delete(self, set_name: SortedSetName, raw: str) -> bool:
        with self._state.lock:
            return self._state.sets[require_set(set_name)].pop(raw, None) is not None

    def clear(self, set_name: SortedSetName) -> int:
        with self._state.lock:
            entries = self._state.sets[require_set(set_name)]
            count = len(entries)
            entries.clear()
            return count

    # reading -------------------------------------------------------------------------------
    def size(self, set_name: SortedSetName, *, max_score: float | None = None) -> int:
        with self._state.lock:
            entries = self._state.sets[require_set(set_name)]
            if max_score is None:
                return len(entries)
            return sum(1 for score in entries.values() if score <= max_score)

    def page(self, set_name: SortedSetName, start: int, count: int, *,
             newest_first: bool = True) -> list[SetEntry]:
        check_page(start, count)
        with self._state.lock:
            chosen = self._ordered(set_name, newest_first)[start:start + count]
        return [SetEntry(raw, score) for raw, score in chosen]

    def by_score(self, set_name: SortedSetName, low: float, high: float, *,
                 limit: int) -> list[SetEntry]:
        if limit < 1:
            raise ValueError(f"by_score takes limit >= 1, not {limit}")
        with self._state.lock:
            chosen = [SetEntry(raw, score) for raw, score in self._ascending(set_name)
                      if low <= score <= high]
        return chosen[:limit]

    def search(self, set_name: SortedSetName, needle: str, *, start: int = 0,
               newest_first: bool = True, limit: int, window: int) -> SearchPage:
        with self._state.lock:
            entries = [(raw, score) for raw, score in self._ordered(set_name, newest_first)]
        return search_window(entries, needle, start, limit, window)
