"""``broker.periodic`` in memory: the published schedule, disabled entries, slot claims.

The running lock of an ``until_executed`` entry is an ordinary lock of the broker's lock
store (:func:`~cogworker.core.broker.running_lock_name`); a slot's claim lock lives here.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence

from cogworker.core.broker import running_lock_name
from cogworker.core.periodic_types import ClaimOutcome, ClaimResult, PeriodicEntry
from cogworker.testing.memory_broker.state import MemoryState, require_name


def _pjid(pjid: str) -> str:
    return require_name(pjid, "a cron entry's pjid")


class MemoryPeriodic:
    """The :class:`~cogworker.core.broker.PeriodicStore` of a memory broker."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state

    # the published schedule ----------------------------------------------------------------
    def publish(self, entries: Sequence[PeriodicEntry], *, replace: bool) -> None:
        with self._state.lock:
            if replace:
                self._state.schedule.clear()
            for entry in entries:
                self._state.schedule[entry.pjid] = copy.deepcopy(entry)

    def schedule(self) -> dict[str, PeriodicEntry]:
        with self._state.lock:
            return copy.deepcopy(self._state.schedule)

    # enabling ------------------------------------------------------------------------------
    def disabled(self) -> frozenset[str]:
        with self._state.lock:
            return frozenset(self._state.disabled)

    def is_disabled(self, pjid: str) -> bool:
        with self._state.lock:
            return _pjid(pjid) in self._state.disabled

    def set_disabled(self, pjid: str, disabled: bool) -> bool:
        with self._state.lock:
            entries = self._state.disabled
            was = _pjid(pjid) in entries
            if disabled:
                entries.add(pjid)
            else:
                entries.discard(pjid)
            return was != disabled

    # slots ---------------------------------------------------------------------------------
    def last_slots(self, pjids: Iterable[str]) -> dict[str, int | None]:
        with self._state.lock:
            return {pjid: self._state.last_slots.get(_pjid(pjid)) for pjid in pjids}

    def prime_last_slot(self, pjid: str, slot: int) -> bool:
        with self._state.lock:
            if _pjid(pjid) in self._state.last_slots:
                return False
            self._state.last_slots[pjid] = int(slot)
            return True

    def _slot_claimed(self, pjid: str, slot: int) -> bool:
        state = self._state
        expires_at = state.slot_claims.get((pjid, slot))
        if expires_at is not None and expires_at <= state.now():
            del state.slot_claims[(pjid, slot)]
            return False
        return expires_at is not None

    def claim_slot(self, pjid: str, slot: int, jid: str, *, until_executed: bool,
                   slot_lock_ttl: float, running_ttl: float) -> ClaimResult:
        running = running_lock_name(_pjid(pjid))
        state = self._state
        with state.lock:
            if until_executed and state.lock_of(running) is not None:
                return ClaimResult(ClaimOutcome.BLOCKED)
            previous = state.last_slots.get(pjid)
            if slot <= (previous or 0) or self._slot_claimed(pjid, slot):
                return ClaimResult(ClaimOutcome.LOST)
            state.slot_claims[(pjid, slot)] = state.now() + slot_lock_ttl
            state.last_slots[pjid] = int(slot)
            if until_executed:
                state.hold_lock(running, jid, running_ttl)
            return ClaimResult(ClaimOutcome.WON, previous)

    def rollback_claim(self, pjid: str, slot: int, previous_slot: int | None,
                       jid: str) -> bool:
        running = running_lock_name(_pjid(pjid))
        state = self._state
        with state.lock:
            restored = state.last_slots.get(pjid) == slot
            if restored:
                state.last_slots[pjid] = slot - 1 if previous_slot is None else previous_slot
            state.slot_claims.pop((pjid, slot), None)
            held = state.lock_of(running)
            if held is not None and held.owner == jid:
                del state.locks[running]
            return restored
