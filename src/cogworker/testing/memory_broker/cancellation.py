"""``broker.extension(CANCELLATIONS)`` in memory: jid → expiry, the waiting entry removed
under the broker's one lock, announcements on the broker's own channels."""

from __future__ import annotations

from contextlib import AbstractContextManager

from cogworker.core.broker.cancellation import WaitingEntry, require_jid
from cogworker.core.broker.subscription import Subscription
from cogworker.testing.memory_broker.state import MemoryState

CANCEL_CHANNEL = "cancel"


class MemoryCancellationStore:
    """:class:`cogworker.core.broker.CancellationStore` in one memory broker's state."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state
        self._until: dict[str, float] = {}

    def cancel(self, jid: str, until: float, now: float,
               waiting: WaitingEntry | None = None) -> bool:
        require_jid(jid)
        with self._state.lock:
            self._until[jid] = float(until)
            self._until = {name: end for name, end in self._until.items() if end >= now}
            removed = waiting is not None and self._remove(waiting)
        self._state.channels.publish(CANCEL_CHANNEL, jid)
        return removed

    def _remove(self, waiting: WaitingEntry) -> bool:
        if waiting.place == "queue":
            jobs = self._state.queues.get(waiting.queue)
            if not jobs or waiting.raw not in jobs:
                return False
            jobs.remove(waiting.raw)  # one copy, as LREM 1 does
            return True
        return self._state.sets[waiting.place].pop(waiting.raw, None) is not None

    def is_cancelled(self, jid: str, now: float) -> bool:
        require_jid(jid)
        with self._state.lock:
            until = self._until.get(jid)
        return until is not None and until >= now

    def active(self, now: float) -> dict[str, float]:
        with self._state.lock:
            return {jid: until for jid, until in self._until.items() if until >= now}

    def withdraw(self, jid: str) -> bool:
        require_jid(jid)
        with self._state.lock:
            return self._until.pop(jid, None) is not None

    def subscribe(self) -> AbstractContextManager[Subscription]:
        return self._state.channels.subscribe(CANCEL_CHANNEL)
