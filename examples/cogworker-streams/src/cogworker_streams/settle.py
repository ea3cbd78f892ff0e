"""One atomic settling step for any number of held stream entries (``lua/settle.lua``).

Acknowledging, giving back, the shutdown requeue, the interrupt path and the unsettled
hand-over are all "act on entries still pending to me, write first, then XACK + XDEL":
one script does them, and :class:`SettleBatch` builds its arguments. Each key is passed in
``KEYS`` once; entries refer to it by position.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

from cogworker.core.broker import LockClaim, SortedSetName
from cogworker.redis.scripts import Scripts
from cogworker_streams.names import (
    GROUP,
    PACKAGE,
    Held,
    KeyList,
    StreamKeys,
    lock_seconds,
    wire,
)

NO_KEY = 0


class Outcome(IntEnum):
    """What ``settle.lua`` did with one entry."""

    SETTLED = 1
    NOT_HELD = 0
    REFUSED = -1
    """The write was refused (a key of another type): the entry stays pending."""


class SettleBatch:
    """The entries of one settling step, in the order they are settled."""

    def __init__(self, keys: StreamKeys, consumer: str) -> None:
        self._keys = keys
        self._consumer = consumer
        self._keys_used = KeyList()
        self._args: list[str | bytes | int | float] = []
        self.entries: list[Held] = []
        self.actions: list[str] = []

    def __len__(self) -> int:
        return len(self.entries)

    def _key(self, name: str) -> int:
        return self._keys_used.position(name)

    def _add(self, action: str, held: Held, key_a: int, key_b: int,
             *extra: str | bytes | int | float) -> None:
        stream = self._key(self._keys.stream(held.queue))
        padded = [*extra, "", "", ""][:3]
        self._args += [action, stream, held.entry_id, wire(payload(held)), key_a, key_b,
                       *padded]
        self.entries.append(held)
        self.actions.append(action)

    def ack(self, held: Held) -> None:
        """Done, or its failure filed: drop it and forget its orphan counter."""
        self._add("ack", held, self._key(self._keys.counter(payload(held))), NO_KEY)

    def requeue(self, held: Held, claim: LockClaim | None) -> None:
        """Not started: back on the pop end of its queue, its lock re-taken."""
        queue = self._key(self._keys.schema.queue(held.queue))
        if claim is None:
            self._add("requeue", held, queue, NO_KEY, held.queue)
        else:
            self._add("requeue", held, queue, self._key(self._keys.lock(claim)), held.queue,
                      claim.owner, lock_seconds(claim))

    def file(self, held: Held, set_name: SortedSetName, score: float, record: str) -> None:
        """The interrupt path: ``record`` into ``set_name``, the counter forgotten."""
        self._add("file", held, self._key(self._keys.schema.sorted_set(set_name)),
                  self._key(self._keys.counter(payload(held))), repr(float(score)),
                  wire(record))

    def park(self, held: Held, hand_over: str) -> None:
        """The unsettled hand-over: the ``{set, score, payload}`` record for any process."""
        self._add("park", held, self._key(self._keys.schema.unsettled), NO_KEY, wire(hand_over))

    def run(self, scripts: Scripts) -> list[Outcome]:
        """Settle every entry in one atomic step; no round trip for an empty batch."""
        if not self.entries:
            return []
        reply: Sequence[int] = scripts.run(
            PACKAGE, "settle", keys=self._keys_used.names,
            args=[GROUP, self._consumer, self._keys.schema.wakeup, *self._args])
        return [Outcome(int(value)) for value in reply]


def payload(held: Held) -> str:
    """The entry's raw payload; ``ValueError`` for an entry deleted by hand (nothing to
    settle: recovery acknowledges such entries away)."""
    if held.raw is None:
        raise ValueError(f"entry {held.entry_id} of queue {held.queue!r} has no payload "
                         "to settle")
    return held.raw
