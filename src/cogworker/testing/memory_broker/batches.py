"""The memory broker's :class:`~cogworker.core.broker.BatchStore`: the same steps as
``batch_update.lua``, each under the broker's lock. Expiry is not kept (a test's batches
live as long as its broker)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from cogworker.core.broker.batches import (
    ARGS_PLACEHOLDER,
    CALLBACK_KINDS,
    NOW_PLACEHOLDER,
    BatchCounts,
    BatchOutcome,
    BatchRecord,
    BatchSpec,
    BatchUpdate,
    CallbackKind,
    MemberState,
    SettleItem,
    record_from_fields,
    spec_fields,
)
from cogworker.testing.memory_broker.state import MemoryState


@dataclass
class _Batch:
    fields: dict[str, str] = field(default_factory=dict)
    members: set[str] = field(default_factory=set)
    unrun: set[str] = field(default_factory=set)
    pending: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    dead: set[str] = field(default_factory=set)
    ran: set[str] = field(default_factory=set)
    ok: set[str] = field(default_factory=set)
    died: set[str] = field(default_factory=set)

    def counts(self) -> BatchCounts:
        total, pending = len(self.members), len(self.pending)
        return BatchCounts(total=total, pending=pending, succeeded=total - pending,
                           failed=len(self.failed), dead=len(self.dead))

    def add(self, member: str) -> None:
        self.members.add(member)
        if member not in self.ran:
            self.unrun.add(member)
        if member in self.ok:
            return
        self.pending.add(member)
        if member in self.died:
            self.dead.add(member)
        elif member in self.ran:
            self.failed.add(member)

    def settle(self, member: str, outcome: BatchOutcome) -> None:
        """Facts for every member seen; counts only for registered members."""
        is_member = member in self.members
        if outcome == "success":
            self.ran.add(member)
            self.ok.add(member)
            self.died.discard(member)
            if is_member:
                for part in (self.unrun, self.pending, self.failed, self.dead):
                    part.discard(member)
            return
        if member in self.ok:
            return
        if outcome != "death":
            self.ran.add(member)
            if is_member:
                self.unrun.discard(member)
        if outcome in ("dead", "death"):
            self.died.add(member)
            if is_member:
                self.failed.discard(member)
                self.dead.add(member)
        elif outcome == "failure" and is_member and member not in self.dead:
            self.failed.add(member)


class MemoryBatchStore:
    def __init__(self, state: MemoryState) -> None:
        self._state = state
        self._batches: dict[str, _Batch] = {}
        self._index: dict[str, float] = {}
        self._cancelled: dict[str, float] = {}

    def register(self, bid: str, members: Sequence[str], now: float, ttl: float,
                 spec: BatchSpec | None = None, callback_queue: str = "default"
                 ) -> BatchUpdate:
        with self._state.broker_pushes() as pushes:
            batch = self._batches.setdefault(bid, _Batch())
            if spec is not None and "sealed" not in batch.fields:
                values = spec_fields(spec)
                batch.fields.update(zip(values[::2], values[1::2], strict=True))
                batch.fields["sealed"] = "1"
                self._index.setdefault(bid, spec.created_at)
            for member in members:
                batch.add(member)
            queue = spec.callback_queue if spec is not None else callback_queue
            return self._fire(bid, batch, queue, now, pushes)  # pushed as the block exits

    def settle(self, bid: str, member: str, outcome: BatchOutcome, now: float, ttl: float,
               callback_queue: str = "default") -> BatchUpdate:
        [update] = self.settle_many([SettleItem(bid, member, outcome, callback_queue)], now,
                                    ttl)
        return update

    def settle_many(self, items: Sequence[SettleItem], now: float, ttl: float
                    ) -> list[BatchUpdate]:
        updates = []
        with self._state.broker_pushes() as pushes:
            for item in items:
                batch = self._batches.setdefault(item.bid, _Batch())
                batch.settle(item.member, item.outcome)
                updates.append(self._fire(item.bid, batch, item.callback_queue, now, pushes))
        return updates

    def _fire(self, bid: str, batch: _Batch, queue: str, now: float,
              pushes: list[tuple[str, str]]) -> BatchUpdate:
        fields = batch.fields
        fired: list[CallbackKind] = []
        sealed, cancelled = "sealed" in fields, "cancelled_at" in fields
        if sealed and not cancelled:
            due = {"death": bool(batch.dead), "complete": not batch.unrun,
                   "success": not batch.pending}
            for kind in CALLBACK_KINDS:
                if due[kind] and f"{kind}_at" not in fields:
                    fields[f"{kind}_at"] = repr(now)
                    fired.append(kind)
                    self._deliver(bid, batch, kind, queue, now, pushes)
        finished = frozenset(k for k in CALLBACK_KINDS if f"{k}_at" in fields)
        return BatchUpdate(bid=bid, fired=tuple(fired), finished=finished, sealed=sealed,
                           cancelled=cancelled, parent=fields.get("parent") or None,
                           parent_callback_queue=fields.get("parent_queue") or None)

    def _deliver(self, bid: str, batch: _Batch, kind: str, queue: str, now: float,
                 pushes: list[tuple[str, str]]) -> None:
        template = batch.fields.get(f"cb:{kind}")
        if template is None:
            return
        extra = batch.fields.get(f"cbx:{kind}", "")
        counts = json.dumps(batch.counts().to_dict(), separators=(",", ":"))
        args = f"[{json.dumps(bid)},{counts}{',' + extra if extra else ''}]"
        raw = template.replace(ARGS_PLACEHOLDER, args, 1).replace(NOW_PLACEHOLDER, repr(now), 1)
        pushes.append((queue, raw))

    def get(self, bid: str) -> BatchRecord | None:
        with self._state.lock:
            batch = self._batches.get(bid)
            if batch is None or "sealed" not in batch.fields:
                return None
            return record_from_fields(bid, dict(batch.fields), batch.counts())

    def members(self, bid: str, state: MemberState, start: int, count: int
                ) -> tuple[list[str], int]:
        with self._state.lock:
            batch = self._batches.get(bid, _Batch())
            chosen = {"all": batch.members, "pending": batch.pending, "succeeded": batch.ok,
                      "failed": batch.failed, "dead": batch.dead}[state]
            everyone = sorted(chosen)
        return everyone[start : start + count], len(everyone)

    def page(self, start: int, count: int) -> tuple[list[BatchRecord], int]:
        with self._state.lock:
            bids = sorted(self._index, key=lambda b: (self._index[b], b), reverse=True)
        records = [self.get(bid) for bid in bids[start : start + count]]
        return [r for r in records if r is not None], len(bids)

    def cancel(self, bid: str, now: float, ttl: float) -> bool:
        with self._state.lock:
            batch = self._batches.get(bid)
            if batch is None or not batch.fields:
                return False
            batch.fields.setdefault("cancelled_at", repr(now))
            self._cancelled[bid] = now
            return True

    def delete_waiting(self, bid: str, queues: Sequence[str]) -> int:
        needle = f'"bid":{json.dumps(bid)}'
        deleted = 0
        state = self._state
        with state.lock:
            for name in ("schedule", "retry"):
                entries = state.sets[name]
                for raw in [raw for raw in entries if needle in raw]:
                    del entries[raw]
                    deleted += 1
            for queue in queues:
                items = state.queues.get(queue)
                if items is None:
                    continue
                kept = [raw for raw in items if needle not in raw]
                deleted += len(items) - len(kept)
                items.clear()
                items.extend(kept)
        return deleted

    def cancelled_since(self, since: float) -> set[str]:
        with self._state.lock:
            return {bid for bid, at in self._cancelled.items() if at >= since}
