"""``broker.locks`` in memory: owner-checked locks with a TTL on the broker's clock.

TTLs are kept as given (the Redis broker rounds them up to whole seconds). A scan walks the
held names in sorted order; its cursor is the last name it returned.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogworker.core.broker import LockPage, LockRecord
from cogworker.testing.memory_broker.payloads import ascii_lower
from cogworker.testing.memory_broker.state import MemoryState, require_name

SCAN_STEP_FACTOR = 10
"""A scan step looks at no more than this many names per lock it may return."""


def _name(name: str) -> str:
    return require_name(name, "a lock name")


class MemoryLocks:
    """The :class:`~cogworker.core.broker.LockStore` of a memory broker."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state

    def acquire(self, name: str, owner: str, ttl: float) -> bool:
        state = self._state
        with state.lock:
            if state.lock_of(_name(name)) is not None:
                return False
            state.hold_lock(name, owner, ttl)
            return True

    def extend(self, name: str, owner: str, ttl: float) -> bool:
        state = self._state
        with state.lock:
            held = state.lock_of(_name(name))
            if held is None or held.owner != owner:
                return False
            state.hold_lock(name, owner, ttl)
            return True

    def retake(self, name: str, owner: str, ttl: float) -> bool:
        state = self._state
        with state.lock:
            held = state.lock_of(_name(name))
            if held is not None and held.owner != owner:
                return False
            state.hold_lock(name, owner, ttl)
            return True

    def release(self, name: str, owner: str) -> bool:
        state = self._state
        with state.lock:
            held = state.lock_of(_name(name))
            if held is None or held.owner != owner:
                return False
            del state.locks[name]
            return True

    def owner(self, name: str) -> str | None:
        with self._state.lock:
            held = self._state.lock_of(_name(name))
            return None if held is None else held.owner

    def _record(self, name: str) -> LockRecord | None:
        state = self._state
        held = state.lock_of(name)
        if held is None:
            return None
        ttl = None if held.expires_at is None else held.expires_at - state.now()
        return LockRecord(name, held.owner, ttl)

    def get(self, names: Sequence[str]) -> dict[str, LockRecord]:
        with self._state.lock:
            records = {name: self._record(_name(name)) for name in names}
        return {name: record for name, record in records.items() if record is not None}

    def scan(self, prefix: str, *, contains: str = "", cursor: str | None = None,
             limit: int = 50) -> LockPage:
        if limit < 1:
            raise ValueError(f"a lock scan returns limit >= 1 locks per step, not {limit}")
        wanted = ascii_lower(contains)
        with self._state.lock:
            names = sorted(name for name in self._state.locks if name.startswith(prefix)
                           and (cursor is None or name > cursor))
            step = names[:limit * SCAN_STEP_FACTOR]
            found: list[LockRecord] = []
            last = None
            for name in step:
                last = name
                if wanted in ascii_lower(name[len(prefix):]):
                    record = self._record(name)
                    if record is not None:
                        found.append(record)
                        if len(found) >= limit:
                            break
        more = last is not None and last != names[-1]
        return LockPage(tuple(found), last if more else None)

    def delete(self, name: str) -> bool:
        with self._state.lock:
            existed = self._state.lock_of(_name(name)) is not None
            self._state.locks.pop(name, None)
            return existed
