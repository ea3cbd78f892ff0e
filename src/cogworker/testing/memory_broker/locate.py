"""``broker.locate`` in memory: where the jobs with some jids are, a bounded step at a time.

Places are looked through in this order: the running jobs (held jobs and work records,
whole, on the first step only), the queues by name, then retry, schedule and dead (lowest
score first). The cursor names the place and the position to go on from
(``<rank>:<position>:<name>``), so a queue registered meanwhile never shifts the places
already looked through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cogworker.core.broker import LocatePage, Sighting, SortedSetName, Whereabouts
from cogworker.testing.memory_broker.payloads import job_class, parse_job
from cogworker.testing.memory_broker.reading import ascending
from cogworker.testing.memory_broker.state import MemoryState

Place = tuple[int, str]
"""(rank, name): rank 0 for a queue, then 1 retry, 2 schedule, 3 dead."""

_SETS: tuple[tuple[Whereabouts, SortedSetName], ...] = (
    ("retrying", "retry"), ("scheduled", "schedule"), ("dead", "dead"))


def _parse_cursor(cursor: str) -> tuple[Place, int]:
    parts = cursor.split(":", 2)
    if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit() and parts[2] and \
            int(parts[0]) <= len(_SETS):
        return (int(parts[0]), parts[2]), int(parts[1])
    raise ValueError(f"{cursor!r} is not a locate cursor: pass None to start, or the cursor "
                     "the previous call returned")


def _cursor(place: Place, position: int) -> str:
    return f"{place[0]}:{position}:{place[1]}"


class Locator:
    """One memory broker's locate (see the module docstring)."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state

    def locate(self, jids: Iterable[str], cursor: str | None, window: int) -> LocatePage:
        if window < 1:
            raise ValueError(f"locate looks at window >= 1 entries per step, not {window}")
        resume = None if cursor is None else _parse_cursor(cursor)
        wanted = set(jids)
        if not wanted:
            return LocatePage({}, None)
        found: dict[str, Sighting] = {}
        with self._state.lock:
            if resume is None:
                self._look_at_running(wanted, found)
            place, start = resume if resume is not None else ((0, ""), 0)
            budget = window
            for current in [p for p in self._places() if p >= place]:
                if len(found) == len(wanted):
                    break
                start = start if current == place else 0
                if budget == 0:
                    return LocatePage(found, _cursor(current, start))
                entries = self._entries(current)
                end = min(start + budget, len(entries))
                where = "queued" if current[0] == 0 else _SETS[current[0] - 1][0]
                for raw in entries[start:end]:
                    _match(parse_job(raw), wanted, found, where, current[1])
                budget -= max(end - start, 0)
                if end < len(entries):
                    return LocatePage(found, _cursor(current, end))
        return LocatePage(found, None)

    def _look_at_running(self, wanted: set[str], found: dict[str, Sighting]) -> None:
        state = self._state
        for holder, raws in sorted(state.held.items()):
            for raw in raws:
                _match(parse_job(raw), wanted, found, "running", holder)
        for identity in sorted(state.work):
            table = state.work_of(identity)
            works = table.works if table is not None else {}
            for tid in sorted(works):
                _match(works[tid].payload, wanted, found, "running", identity)

    def _places(self) -> list[Place]:
        state = self._state
        queues = state.registered | {name for name, jobs in state.queues.items() if jobs}
        return [(0, name) for name in sorted(queues)] + \
            [(rank, name) for rank, (_where, name) in enumerate(_SETS, start=1)]

    def _entries(self, place: Place) -> list[str]:
        rank, name = place
        if rank == 0:
            return list(self._state.queues.get(name, ()))
        return [raw for raw, _score in ascending(self._state.sets[_SETS[rank - 1][1]])]


def _match(job: Mapping[str, Any] | None, wanted: set[str], found: dict[str, Sighting],
           where: Whereabouts, place: str) -> None:
    jid = job.get("jid") if job is not None else None
    if job is not None and isinstance(jid, str) and jid in wanted and jid not in found:
        found[jid] = Sighting(where, place, job_class(job))
