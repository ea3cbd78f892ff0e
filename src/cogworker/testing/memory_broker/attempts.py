"""``broker.extension(ATTEMPTS)`` in memory: jid → its trail, gone after its TTL on the
broker's clock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cogworker.core.broker.attempts import TRAIL_LIMIT, TRAIL_TTL, Attempt
from cogworker.testing.memory_broker.state import MemoryState


@dataclass(slots=True)
class _Trail:
    entries: list[Attempt] = field(default_factory=list)
    expires_at: float = 0.0


class MemoryAttemptStore:
    """:class:`cogworker.core.broker.AttemptStore` in one memory broker's state."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state
        self._trails: dict[str, _Trail] = {}

    def _live(self, jid: str) -> _Trail | None:
        trail = self._trails.get(jid)
        if trail is not None and trail.expires_at <= self._state.now():
            del self._trails[jid]
            return None
        return trail

    def append(self, jid: str, attempt: Attempt, *, keep: int = TRAIL_LIMIT,
               ttl: float = TRAIL_TTL) -> None:
        if keep < 1 or ttl <= 0:
            raise ValueError(f"a trail keeps at least 1 entry for more than 0 s, not "
                             f"keep={keep!r}, ttl={ttl!r}")
        with self._state.lock:
            trail = self._live(jid) or self._trails.setdefault(jid, _Trail())
            trail.entries.append(attempt)
            del trail.entries[:-keep]
            trail.expires_at = self._state.now() + ttl

    def trail(self, jid: str, limit: int = TRAIL_LIMIT) -> list[Attempt]:
        if limit < 1:
            raise ValueError(f"a trail read needs a limit of at least 1, not {limit!r}")
        with self._state.lock:
            trail = self._live(jid)
            return [] if trail is None else trail.entries[-limit:]

    def clear(self, jids: Sequence[str]) -> int:
        with self._state.lock:
            found = [jid for jid in dict.fromkeys(jids) if self._live(jid) is not None]
            for jid in found:
                del self._trails[jid]
            return len(found)
