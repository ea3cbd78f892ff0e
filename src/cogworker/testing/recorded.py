"""What fake mode records: the pushed payloads, per job name, in push order.

A payload is kept exactly as it would have been stored (JSON round trip, ``at`` for a
scheduled job, ``enqueued_at`` for an immediate one). A job is *due* when it has no ``at``
or its ``at`` is not after the test clock; with the clock not frozen every job is due
(delays are ignored, as the original's fake mode does).
"""

from __future__ import annotations

import copy
import itertools
import threading
from dataclasses import dataclass

from cogworker.core.payload import Payload


@dataclass(frozen=True, slots=True)
class _Entry:
    seq: int
    payload: Payload

    def due(self, now: float | None) -> bool:
        at = self.payload.get("at")
        return now is None or at is None or float(at) <= now


class RecordedJobs:
    """Recorded payloads by job name (thread-safe: jobs may be pushed from any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_name: dict[str, list[_Entry]] = {}
        self._seq = itertools.count()

    def add(self, payload: Payload) -> None:
        """Record ``payload`` (already JSON round-tripped) at the end of its job's list."""
        name = str(payload["class"])
        with self._lock:
            self._by_name.setdefault(name, []).append(_Entry(next(self._seq), payload))

    def payloads(self, name: str) -> list[Payload]:
        """Copies of the payloads recorded for ``name``, oldest first."""
        with self._lock:
            entries = list(self._by_name.get(name, ()))
        return [copy.deepcopy(entry.payload) for entry in entries]

    def by_name(self) -> dict[str, list[Payload]]:
        """Copies of every non-empty list, by job name."""
        with self._lock:
            names = [name for name, entries in self._by_name.items() if entries]
        return {name: self.payloads(name) for name in sorted(names)}

    def clear(self, name: str | None = None) -> list[Payload]:
        """Forget ``name``'s payloads, or every payload when ``name`` is None; returns them."""
        with self._lock:
            if name is None:
                removed = [entry for entries in self._by_name.values() for entry in entries]
                self._by_name.clear()
            else:
                removed = self._by_name.pop(name, [])
        return [entry.payload for entry in removed]

    def take_due(self, name: str | None, now: float | None) -> Payload | None:
        """Remove and return the oldest due payload of ``name`` (of any job when None)."""
        with self._lock:
            lists = [self._by_name.get(name, [])] if name is not None else self._by_name.values()
            oldest: tuple[list[_Entry], _Entry] | None = None
            for entries in lists:
                for entry in entries:
                    if entry.due(now):
                        if oldest is None or entry.seq < oldest[1].seq:
                            oldest = (entries, entry)
                        break  # entries are in push order: the first due one is the oldest
            if oldest is None:
                return None
            oldest[0].remove(oldest[1])
            return oldest[1].payload

    def remove_jid(self, jid: str) -> Payload | None:
        """Remove and return the oldest payload whose jid is ``jid``, None when none is."""
        with self._lock:
            found = [(entries, entry) for entries in self._by_name.values()
                     for entry in entries if entry.payload.get("jid") == jid]
            if not found:
                return None
            entries, entry = min(found, key=lambda pair: pair[1].seq)
            entries.remove(entry)
            return entry.payload

    def next_at(self, name: str) -> tuple[int, float | None]:
        """How many payloads ``name`` has, and the earliest ``at`` among them (if any)."""
        with self._lock:
            entries = list(self._by_name.get(name, ()))
        times = [float(e.payload["at"]) for e in entries if e.payload.get("at") is not None]
        return len(entries), min(times, default=None)

    def has_periodic(self, pjid: str) -> bool:
        """Whether a payload of cron entry ``pjid`` is still waiting to run."""
        with self._lock:
            return any(entry.payload.get("periodic_pjid") == pjid
                       for entries in self._by_name.values() for entry in entries)
