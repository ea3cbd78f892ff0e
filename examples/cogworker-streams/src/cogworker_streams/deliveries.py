"""Which stream entry each job this process holds is: the entry ids behind the raws.

The engine settles a job by its :class:`~cogworker.core.broker.UnitOfWork` (queue and raw);
a stream settles an entry by its id. :class:`Deliveries` remembers the ids of what the
fetches returned. What it does not know (a fetch whose reply was lost, a job handed back by
the reconcile) is read from the consumer's pending entries (:func:`read_pending`), which
are the truth: every settling step re-checks, atomically, that the entry is still pending
to this consumer with the expected payload.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from cogworker.core.broker import UnitOfWork
from cogworker.redis.scripts import Scripts
from cogworker_streams.names import GROUP, PACKAGE, Held, StreamKeys, text

PENDING_READ_LIMIT = 1000
"""Entries read per stream and consumer in one call: far above what one process holds
(its concurrency plus prefetch); recovery reads a dead consumer's entries in such steps."""


def read_pending(scripts: Scripts, keys: StreamKeys, queues: Sequence[str], consumer: str,
                 limit: int = PENDING_READ_LIMIT) -> list[Held]:
    """The entries of ``queues``' streams pending to ``consumer``, oldest first per stream,
    in one read-only round trip ([] without one for no queues)."""
    if not queues:
        return []
    reply = scripts.run(PACKAGE, "pending", keys=[keys.stream(queue) for queue in queues],
                        args=[GROUP, consumer, limit])
    return [Held(queues[int(reply[i]) - 1], text(reply[i + 1]),
                 None if reply[i + 2] is None else text(reply[i + 2]))
            for i in range(0, len(reply), 3)]


class Deliveries:
    """Entry ids by raw, for the jobs this process was handed. Thread-safe.

    :meth:`take` hands an entry to one settling call at a time, so two threads settling
    two copies of the same raw get two different entries.
    """

    def __init__(self) -> None:
        self._by_raw: dict[str, list[Held]] = {}
        self._in_flight: set[str] = set()
        self._lock = threading.Lock()

    def add(self, held: Held) -> None:
        if held.raw is None:
            return
        with self._lock:
            self._by_raw.setdefault(held.raw, []).append(held)

    def merge(self, entries: Iterable[Held]) -> None:
        """Learn the entries read from the pending list that are not known yet."""
        with self._lock:
            for held in entries:
                if held.raw is None or held.entry_id in self._in_flight:
                    continue
                known = self._by_raw.setdefault(held.raw, [])
                if all(other.entry_id != held.entry_id for other in known):
                    known.append(held)

    def take(self, work: UnitOfWork) -> Held | None:
        """An entry holding ``work.raw``, preferably of ``work.queue``, now reserved for the
        caller (give it back with :meth:`release` or forget it with :meth:`done`)."""
        with self._lock:
            known = self._by_raw.get(work.raw)
            if not known:
                return None
            chosen = next((h for h in known if h.queue == work.queue), known[0])
            known.remove(chosen)
            if not known:
                del self._by_raw[work.raw]
            self._in_flight.add(chosen.entry_id)
            return chosen

    def release(self, entries: Iterable[Held]) -> None:
        """The settling call failed: the entries are known again for the next attempt."""
        with self._lock:
            for held in entries:
                self._in_flight.discard(held.entry_id)
                if held.raw is not None:
                    self._by_raw.setdefault(held.raw, []).append(held)

    def done(self, entries: Iterable[Held]) -> None:
        """The settling call answered: the entries are settled, or no longer this
        process's; either way they are forgotten."""
        with self._lock:
            for held in entries:
                self._in_flight.discard(held.entry_id)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(known) for known in self._by_raw.values())
