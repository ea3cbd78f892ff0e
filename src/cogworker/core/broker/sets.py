"""``broker.sets``: the schedule, retry and dead sets of jobs, ordered by score.

The score is epoch seconds: when a scheduled job is due, when a failed job retries, when a
dead job died. "Newest first" means highest score first; positions count from the end a
read starts at. An entry is its exact raw payload: two identical raws are one entry, and
removal always matches the raw that was read (never a re-serialized copy).

The dead set is capped on every write into it: entries older than the broker's
``dead_timeout`` and the oldest beyond ``dead_max_jobs`` are dropped in the same step
(settings of the same names).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from cogworker.core.broker.records import GraduatedSetName, SearchPage, SortedSetName

DEFER_DELAY = 60.0
"""Seconds a due entry that could not be moved onto its queue is pushed into the future."""


@dataclass(frozen=True, slots=True)
class SetEntry:
    """One entry of a set: its exact raw payload and its score."""

    raw: str
    score: float


@dataclass(slots=True)
class GraduationReport:
    """What one :meth:`JobSets.graduate` pass did: entries moved onto their queues, buried
    in dead (not a job), and deferred by :data:`DEFER_DELAY` (their move failed)."""

    moved: int = 0
    buried: int = 0
    deferred: int = 0


class JobSets(Protocol):
    """The three job sets. Thread-safe.

    Every method raises :class:`~cogworker.core.errors.BrokerUnavailableError` when the
    store cannot be reached and :class:`~cogworker.core.errors.BrokerError` on any other
    failure, the driver's exception as ``__cause__``, unless it says otherwise. A
    ``set_name`` that is not one of the three raises ``ValueError``.
    """

    # writing ---------------------------------------------------------------------------
    def file(self, set_name: SortedSetName, score: float, raw: str) -> None:
        """Add ``raw`` with ``score`` (an entry already there gets the new score). Into dead,
        the caps are applied in the same atomic step. Raises when not written."""
        ...

    def graduate(self, set_name: GraduatedSetName, now: float, limit: int) -> GraduationReport:
        """Move up to ``limit`` entries due at ``now`` (score <= ``now``, lowest first) onto
        the queues their payloads name, with ``enqueued_at`` set to ``now``.

        Each entry moves in its own atomic step that writes the queue first and removes the
        entry second, and only while the entry is still in the set: two processes
        graduating the same set push every entry exactly once (an entry another process took
        is skipped and not counted). The queue is registered and its fetchers woken.
        An entry that is not a job is *buried*: filed into dead wrapped with its exact bytes
        (an unparseable wrapper) and counted as a failed job, in one atomic step. An entry
        whose move fails for any other reason than unavailability (its queue's stored value
        is unusable...) is *deferred*: its score becomes ``now`` + :data:`DEFER_DELAY`, so it
        never blocks the due entries behind it.

        Raises ``BrokerUnavailableError`` when the store is lost midway (entries moved stay
        moved; the rest wait for the next pass). ``limit`` below 1: an empty report.
        """
        ...

    def requeue(self, set_name: SortedSetName, raw: str, new_raw: str, queue: str) -> bool:
        """Move the entry ``raw`` onto the push end of ``queue`` as ``new_raw`` (built by the
        caller: ``enqueued_at`` re-stamped, maybe marked ``manual_retry``), like a new push,
        in one atomic step that writes the queue first and removes the entry second ("retry
        now", and graduation). The queue is registered and its fetchers woken.

        False, writing nothing, when ``raw`` is no longer in the set (another process or
        person took it first).
        """
        ...

    def reschedule(self, set_name: SortedSetName, raw: str, score: float) -> bool:
        """Give the entry ``raw`` the score ``score`` if it is still in the set (atomic);
        False, writing nothing, when it is gone."""
        ...

    def delete(self, set_name: SortedSetName, raw: str) -> bool:
        """Remove the entry ``raw``; False when it was not there. Removing an entry of retry
        or dead also drops what the broker keeps about that jid's failures (Redis: the
        original's ``job_attempts:<jid>`` trail)."""
        ...

    def clear(self, set_name: SortedSetName) -> int:
        """Empty the set in one atomic step; returns how many entries it held. For retry and
        dead the failure trails of their jids are dropped too (in bounded steps after the
        set is emptied; a failure there is logged, never raised)."""
        ...

    # reading ---------------------------------------------------------------------------
    def size(self, set_name: SortedSetName, *, max_score: float | None = None) -> int:
        """How many entries the set holds; with ``max_score``, only those with a score up to
        it (how many are due: ``max_score=now``). Counted by the store, nothing read."""
        ...

    def page(self, set_name: SortedSetName, start: int, count: int, *,
             newest_first: bool = True) -> list[SetEntry]:
        """Up to ``count`` entries from position ``start``, highest score first (or lowest
        first). Reads only those entries; past the end, or ``count`` 0, gives []. Raises
        ``ValueError`` for a negative ``start`` or ``count``."""
        ...

    def by_score(self, set_name: SortedSetName, low: float, high: float, *,
                 limit: int) -> list[SetEntry]:
        """Up to ``limit`` entries with ``low`` <= score <= ``high``, lowest score first
        (entries of one score in raw order). Finding an entry again by its known score,
        and walking a set that is being emptied (go on from the last score seen, skipping
        the raws already seen at it), read this way. Raises ``ValueError`` when ``limit``
        is below 1."""
        ...

    def search(self, set_name: SortedSetName, needle: str, *, start: int = 0,
               newest_first: bool = True, limit: int, window: int) -> SearchPage:
        """Entries whose raw text contains ``needle``, from position ``start``: one bounded
        step inside the store, like :meth:`QueueStore.search
        <cogworker.core.broker.queues.QueueStore.search>` (hits carry their scores).
        Finding a job by jid is a search for the jid, the hits then parsed to check it is
        the job's own ``jid`` field."""
        ...
