"""``broker.queues``: the queues jobs wait on, and the pushes that fill them.

A queue is an ordered list of raw payloads with two ends. A push adds at the **push end**
(the newest job; Redis: the left, ``LPUSH``); a fetch takes from the **pop end** (the
oldest job, the next to run; Redis: the right). Jobs handed back go onto the pop end, so
they run next. "Newest first" reads from the push end; "oldest first" reads in the order
workers take jobs. Positions count from the end a read starts at (0 = that end's job).

A queue name is a non-empty string (every method raises ``ValueError`` for an empty one).
A queue is *registered* once anything was pushed on it or a worker declared it; the broker
never unregisters a queue (clearing empties it, the name stays listed).

A queue whose stored value is unusable (Redis: a key of another type) never stops a fetch:
the broker moves it aside (Redis: renamed under ``quarantine:``, kept 30 days, logged once
as an error) and the call goes on as if the queue were empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from cogworker.core.broker.locks import Relock
from cogworker.core.broker.records import SearchPage, UnitOfWork
from cogworker.core.broker.subscription import Subscription


@dataclass(frozen=True, slots=True)
class QueueRecord:
    """One queue as it is now: its size, the raw at its pop end (None when empty), and
    whether workers skip it. The API turns ``oldest`` into the queue's latency."""

    name: str
    size: int
    oldest: str | None
    paused: bool


class QueueStore(Protocol):
    """The queues of one namespace. Thread-safe.

    Every method raises :class:`~cogworker.core.errors.BrokerUnavailableError` when the
    store cannot be reached (retry later) and :class:`~cogworker.core.errors.BrokerError`
    on any other failure, the driver's exception as ``__cause__``, unless it says otherwise.
    """

    # pushing ---------------------------------------------------------------------------
    def store(self, immediate: Sequence[tuple[str, str]],
              scheduled: Sequence[tuple[float, str]]) -> None:
        """Store jobs in one atomic step: all of them, or none.

        ``immediate`` (queue, raw) pairs go on the push end of their queues, the raws of
        one queue in the given order (the first given is the first fetched), and every
        queue touched is registered in the same step. ``scheduled`` (at, raw) pairs go into
        the ``schedule`` set with score ``at``. Both empty: nothing happens (no round trip).

        Delivery: once it returns, every job is stored. When it raises, nothing was stored,
        except after a :class:`~cogworker.core.errors.BrokerUnavailableError` that lost the
        reply of a request the store had received: the jobs may then be stored (exactly
        once: nothing is ever sent twice), and the caller cannot tell.

        After the write, idle fetchers of the touched queues are woken (see
        :meth:`subscribe_wakeups`); that is best-effort and never fails the call.
        """
        ...

    # reading ---------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every registered queue name, sorted. Queue names are configuration (a fleet has
        tens, not thousands), so this reads them all."""
        ...

    def records(self, names: Sequence[str] | None = None) -> list[QueueRecord]:
        """Size, oldest raw and paused state of ``names`` (None: every registered queue),
        read together (one round trip on Redis), in the order of ``names`` (registered
        queues: sorted). A name that holds no job gives size 0 and ``oldest`` None; empty
        ``names`` gives [] without a round trip."""
        ...

    def size(self, queue: str) -> int:
        """How many jobs wait on ``queue`` (0 for an unknown queue)."""
        ...

    def page(self, queue: str, start: int, count: int, *,
             newest_first: bool = True) -> list[str]:
        """Up to ``count`` raws of ``queue`` from position ``start``: newest first (from the
        push end) or oldest first (the order workers take them).

        Reads only those entries. ``start`` past the end, or ``count`` 0, gives [].
        Raises ``ValueError`` for a negative ``start`` or ``count``. The queue may change
        between two pages: a page is a snapshot of its own entries only.
        """
        ...

    def search(self, queue: str, needle: str, *, start: int = 0, newest_first: bool = True,
               limit: int, window: int) -> SearchPage:
        """Entries of ``queue`` whose raw text contains ``needle``, from position ``start``.

        The match is a plain substring, case-insensitive for ASCII letters (``needle``
        lower-cased by the caller; anything else matches exactly). One bounded step: it
        looks at no more than ``window`` entries and returns at most ``limit`` hits, done
        inside the store (Redis: one Lua call), so a search of 100,000 jobs never copies
        them to the caller; go on from ``next_position``. An empty ``needle`` matches every
        entry. Raises ``ValueError`` when ``limit`` or ``window`` is below 1.
        """
        ...

    # changing --------------------------------------------------------------------------
    def remove(self, queue: str, raw: str) -> int:
        """Remove every entry of ``queue`` equal to ``raw`` (exact bytes); returns how many
        (0 when none, also for an unknown queue). Atomic."""
        ...

    def clear(self, queue: str) -> int:
        """Delete every job of ``queue`` in one atomic step; returns how many it held. The
        name stays registered."""
        ...

    def pause(self, queue: str) -> bool:
        """Make every fetcher skip ``queue`` from its next fetch on (fetchers read the
        paused set afresh on every fetch). True when it was not paused before."""
        ...

    def resume(self, queue: str) -> bool:
        """Undo :meth:`pause`. True when it was paused."""
        ...

    def paused(self) -> frozenset[str]:
        """The names of the paused queues, read afresh on every call."""
        ...

    # taking jobs (strategies that hold nothing: the built-in ``basic``) -----------------
    def pop(self, order: Sequence[str], max_jobs: int) -> list[UnitOfWork]:
        """Take up to ``max_jobs`` jobs off the pop ends of ``order``'s queues, without
        waiting: the first queue is drained before the next one is tried.

        Each job leaves its queue atomically and then exists only in the caller's memory:
        a caller that dies before it settles the job loses it. ``order`` is the distinct
        queue names to try; paused queues are not skipped here (the caller filters them
        with :meth:`paused`). Empty ``order`` or ``max_jobs`` below 1 gives [].
        """
        ...

    def pop_blocking(self, order: Sequence[str], timeout: float) -> UnitOfWork | None:
        """Take one job off the first non-empty queue of ``order``, waiting up to
        ``timeout`` seconds (Redis: one ``BRPOP``) for one to arrive on any of them.

        None after the timeout. Same delivery as :meth:`pop`: the job then lives only in
        the caller's memory. A push made while it waits is taken without polling. Raises
        ``ValueError`` for an empty ``order`` or a ``timeout`` that is not above 0 (a store
        may read 0 as "wait forever").
        """
        ...

    def push_back(self, work: UnitOfWork, relock: Relock | None = None) -> None:
        """Put a job this process took back on the pop end of ``work.queue``, so it runs
        next; idle fetchers of that queue are woken (best-effort).

        One atomic step, which also re-takes the lock ``relock(work.raw)`` names, if any
        (see :class:`~.locks.LockClaim`). Raises when it could not be written: the job is
        then not on the queue, and the caller still holds its only copy.
        """
        ...

    def subscribe_wakeups(self) -> AbstractContextManager[Subscription]:
        """Subscribe to wake-ups: each message is the name of a queue that just received
        work (a push, a handed-back job, a graduated or recovered one).

        The subscription is confirmed when the context is entered; it uses a connection
        of its own (never one a fetch waits on). Wake-ups are best-effort: a waiting
        fetcher must also look at its queues every so often.
        """
        ...
