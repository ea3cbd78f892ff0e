"""``broker.extension(STATUS)`` in memory: jid → its latest record, gone at ``expires_at``
on the broker's clock."""

from __future__ import annotations

from collections.abc import Sequence

from cogworker.core.broker.status import READ_LIMIT, StatusRecord
from cogworker.testing.memory_broker.state import MemoryState


class MemoryStatusStore:
    """:class:`cogworker.core.broker.StatusStore` in one memory broker's state."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state
        self._records: dict[str, StatusRecord] = {}

    def write(self, records: Sequence[StatusRecord]) -> None:
        with self._state.lock:
            now = self._state.now()
            for jid in [jid for jid, kept in self._records.items() if kept.expires_at <= now]:
                del self._records[jid]
            for record in records:
                self._records[record.jid] = record

    def read(self, jids: Sequence[str], max_ttl: float, now: float) -> dict[str, StatusRecord]:
        wanted = list(dict.fromkeys(jids))
        if len(wanted) > READ_LIMIT:
            raise ValueError(f"read at most {READ_LIMIT} statuses at once, not {len(wanted)}")
        with self._state.lock:
            found = {jid: self._records.get(jid) for jid in wanted}
        return {jid: record for jid, record in found.items()
                if record is not None and record.expires_at > now}
