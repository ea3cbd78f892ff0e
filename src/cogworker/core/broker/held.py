"""``broker.held``: jobs a process holds until it settles them, and recovering them.

A reliable fetch strategy *claims* jobs: each moves atomically from its queue onto the
claiming process's **held jobs** (Redis: the list ``inprogress:<identity>``), and leaves
them only when it is settled: released (done, or its failure filed), put back on its
queue, filed by the atomic interrupt path, or handed over. So a job is always on its queue,
held, or where it went next — never nowhere. When the process dies, another one recovers
its held jobs (:meth:`HeldJobStore.recover_orphans`).

The **holder** is the process's identity. A holder that holds jobs beats with
``holds_jobs=True`` (:meth:`ProcessRegistry.beat <.processes.ProcessRegistry.beat>`), which
registers it and stamps its last beat on the store's clock: what recovery reads to decide
that it is dead. Each job also has an **orphan counter** (by jid; by a digest of its bytes
when it has none) counting how often its holder died running it (kept 7 days after the
last bump); a job orphaned more than ``max_orphanings`` times goes to dead instead of
running again.

Every settling operation is one atomic step that writes first and removes second, and acts
only while the raw is still held (False otherwise, nothing written). On a full store
(Redis: ``maxmemory`` with ``noeviction``) the settling steps and :meth:`claim` still go
through (they free as much as they fill); :meth:`claim_blocking` does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from cogworker.core.broker.locks import Relock
from cogworker.core.broker.records import SortedSetName, UnitOfWork
from cogworker.core.errors import PayloadError
from cogworker.core.payload import Payload, decode

ORPHAN_COUNTER_TTL = 7 * 24 * 3600
"""Seconds an orphan counter lives after its last bump (the original's 7 days)."""
LIVE_QUEUE_WINDOW = 120.0
"""Seconds within which a process's declaration of a queue means "a live process reads it"."""


@dataclass(frozen=True, slots=True)
class ClaimBatch:
    """What one :meth:`HeldJobStore.claim` took, in the order taken, and the queues of the
    order that were not paused (the ones worth waiting on when nothing was taken)."""

    works: tuple[UnitOfWork, ...]
    open_queues: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RecoveryOptions:
    """The settings one recovery pass works with.

    ``threshold``: seconds since its last beat after which a holder without a presence
    record is dead (the ``orphan_threshold`` setting). ``max_orphanings``: recoveries of
    one job before it goes to dead instead. ``scan``: also look for held jobs whose holder
    the registry lost (expensive: ask for it until a report says ``registry_read``).
    """

    threshold: float
    max_orphanings: int
    scan: bool = False


@dataclass(frozen=True, slots=True)
class StepFailure:
    """A step of a recovery pass that failed and was skipped: which, and why."""

    site: str
    error: Exception


@dataclass(slots=True)
class RecoveryReport:
    """What one recovery pass did (``HeldJobStore.recover_orphans``, ``recover_process``
    and ``Fetcher.recover_orphans``).

    ``moved``: jobs requeued; ``recovered``: of those, how many per dead holder (the caller
    runs the ``orphans_recovered`` hook for each); ``requeued``: the raws of those jobs per
    dead holder, as they were held (for the hook's ``jobs``); ``parked``: jobs orphaned too
    often, set aside for burial; ``buried``: dead records of jobs orphaned too often, as
    filed into dead (run death hooks and lock releases for them); ``filed_dead``:
    handed-over failures filed into dead, as stored (the same); ``failed``: jobs whose queue
    could not be written (they stay held; the next pass tries again); ``unlisted_queues``:
    queues jobs were put on that no live process reads; ``registry_read``: the holders
    registry (and the asked ``scan``) were read in full; ``connection_lost``: the store
    became unreachable during the pass; ``failures``: steps that failed for another reason,
    skipped.
    """

    moved: int = 0
    failed: int = 0
    buried: list[str] = field(default_factory=list)
    unlisted_queues: list[str] = field(default_factory=list)
    registry_read: bool = False
    connection_lost: bool = False
    recovered: dict[str, int] = field(default_factory=dict)
    requeued: dict[str, list[str]] = field(default_factory=dict)
    parked: int = 0
    filed_dead: list[str] = field(default_factory=list)
    failures: list[StepFailure] = field(default_factory=list)

    def requeued_jobs(self, identity: str) -> list[Payload]:
        """The payloads of ``identity``'s requeued jobs (unreadable raws left out)."""
        jobs = []
        for raw in self.requeued.get(identity, ()):
            try:
                jobs.append(decode(raw))
            except PayloadError:
                continue
        return jobs


class HeldJobStore(Protocol):
    """Held jobs of every process. Thread-safe.

    Every method raises :class:`~cogworker.core.errors.BrokerUnavailableError` when the
    store cannot be reached and :class:`~cogworker.core.errors.BrokerError` on any other
    failure, the driver's exception as ``__cause__``, unless it says otherwise. Where a
    step requeues a job, ``relock`` names the lock to re-take with it
    (:class:`~.locks.LockClaim`), in the same atomic step.
    """

    def supported(self) -> str | None:
        """None when this store can hold jobs (the claim steps work), else why not, in
        words (Redis: ``"Redis 6.0 < 6.2 has no LMOVE"``). Asks the server, so ask once.
        ``BrokerUnavailableError`` propagates; any other failure to find out answers None
        (a modern server is assumed, and :meth:`claim` raises
        :class:`~cogworker.core.errors.UnsupportedCommandError` if that was wrong)."""
        ...

    # claiming --------------------------------------------------------------------------
    def claim(self, holder: str, order: Sequence[str], max_jobs: int) -> ClaimBatch:
        """Move up to ``max_jobs`` (>= 1) jobs from the pop ends of ``order``'s queues onto
        ``holder``'s held jobs, without waiting, in one round trip.

        ``order`` is the distinct queue names in the order to try (the strategy's choice);
        paused queues are skipped, read in the same step. A queue is drained before the
        next is tried. Each job moves atomically (held first, then removed from its queue:
        a failure in between duplicates, never loses). A queue or held list whose stored
        value is unusable is quarantined and the claim runs again at once. Empty ``order``
        takes nothing and finds no open queue, without a round trip; ``max_jobs`` below 1
        raises ``ValueError``.

        A ``BrokerUnavailableError`` may hide a claim the store made (a lost reply): those
        jobs are then held, unknown to the caller; :meth:`held` shows them (the built-in
        strategy's reconcile puts such strays back). Raises
        :class:`~cogworker.core.errors.UnsupportedCommandError` when the server cannot
        hold jobs after all (fall back to a strategy that holds nothing).
        """
        ...

    def claim_blocking(self, holder: str, queue: str, timeout: float) -> UnitOfWork | None:
        """Wait up to ``timeout`` seconds for a job on ``queue`` and move it onto
        ``holder``'s held jobs atomically (Redis: ``BLMOVE``). None after the timeout;
        ``ValueError`` for a ``timeout`` that is not above 0 (a store may read 0 as "wait
        forever").

        For a strategy with a single open queue: the store wakes it, no polling. A pause
        of ``queue`` applies from the next call. Raises
        :class:`~cogworker.core.errors.BrokerFullError` when the store is full and refuses
        to wait (wait for wake-ups and use :meth:`claim` instead, which still goes through),
        and :class:`~cogworker.core.errors.UnsupportedCommandError` like :meth:`claim`.
        """
        ...

    def held(self, holder: str) -> list[str]:
        """The raws ``holder`` holds, most recently claimed first. Bounded by what one
        process claims (its concurrency plus prefetch), so read whole."""
        ...

    # settling --------------------------------------------------------------------------
    def release(self, holder: str, works: Sequence[UnitOfWork]) -> int:
        """The jobs are settled (done, or their failure filed): drop each raw (one
        occurrence each) from ``holder``'s held jobs, and only for a raw really dropped
        forget its orphan counter. One atomic step for all; returns how many were dropped.

        A raw that is no longer held belongs to a run that was superseded (its holder was
        taken for dead and the job recovered elsewhere): its late release leaves the counter
        to the run that superseded it, so a job that keeps its process from beating still
        reaches ``max_orphanings``. Empty ``works``: 0, no round trip. Raises when it cannot
        be written: the caller keeps the jobs as pending releases and never re-runs them.
        """
        ...

    def return_to_queue(self, holder: str, work: UnitOfWork,
                        relock: Relock | None = None) -> bool:
        """A held job that did not start goes back on the pop end of the queue its payload
        names (``default`` when it names none or cannot be read), so it runs next; its
        fetchers are woken (best-effort). Written first, dropped from the held jobs second,
        one atomic step. False, nothing written, when ``holder`` no longer holds it."""
        ...

    def file(self, holder: str, work: UnitOfWork, set_name: SortedSetName, score: float,
             record: str) -> bool:
        """The interrupt path, for a job that ran and whose failure could not be filed the
        normal way: add ``record`` to ``set_name`` with ``score``, then drop the held raw
        and forget its orphan counter, one atomic step (dead's caps apply at its next
        regular write). False, nothing written, when ``holder`` no longer holds it."""
        ...

    def park(self, holder: str, work: UnitOfWork, set_name: SortedSetName, score: float,
             record: str) -> bool:
        """At shutdown, hand over a failure this process could not file: leave
        ``(set_name, score, record)`` for any live process to file
        (:meth:`file_unsettled`), then drop the held raw, one atomic step. The job already
        ran: it is never requeued. False, nothing written, when it is no longer held."""
        ...

    def hand_over(self, set_name: SortedSetName, score: float, record: str) -> None:
        """Leave ``(set_name, score, record)`` for any live process to file, for a strategy
        that holds nothing (the built-in ``basic``). Raises when not written."""
        ...

    def requeue_all(self, holder: str, finished: Sequence[str], keep: Sequence[str],
                    relock: Relock | None = None) -> int:
        """At shutdown, settle all of ``holder``'s held jobs in one atomic step.

        Each raw of ``finished`` (done, only its release failed) is dropped, with its orphan
        counter when it was still held; each raw of ``keep`` stays held (counted by
        occurrence, like ``finished``); every other held job goes back on the pop end of its
        queue, the earliest claimed nearest the pop end (it runs first again), its fetchers
        woken. A shutdown is not an orphaning: counters stay as they are. A job whose queue
        cannot be written stays held (logged) for orphan recovery. Returns how many were
        requeued (0, no write, when nothing is held).
        """
        ...

    # recovery --------------------------------------------------------------------------
    def recover_orphans(self, own_identity: str, options: RecoveryOptions,
                        relock: Relock | None = None) -> RecoveryReport:
        """Requeue the held jobs of every dead holder but ``own_identity``.

        Candidates are the registered holders, plus with ``options.scan`` any held jobs
        whose holder the registry lost. A holder is **dead** when its presence record is
        gone **and** its last beat, on the store's clock, is older than
        ``options.threshold`` (no last beat counts as old): a process that merely missed a
        few beats keeps its jobs. Each job moves in its own atomic step that re-checks
        that the holder is dead and the job is still its most recently claimed one, so a
        holder that comes back to life keeps the rest. Jobs move most recently claimed
        first, each onto the pop end of the queue its payload names (``default`` when it
        names none or cannot be read), so the earliest claimed runs first again; the queue
        is registered, and listed in ``unlisted_queues``, when no live process declared it
        within :data:`LIVE_QUEUE_WINDOW` seconds.

        Each requeue bumps the job's orphan counter; a job orphaned more than
        ``options.max_orphanings`` times is parked for burial instead (or, when parking
        fails, filed into dead at once: its record in ``buried``). A job whose queue cannot
        be written moves behind the holder's other jobs and stays held (``failed``). A dead
        holder left with nothing held is forgotten (registry and last beat), re-checked
        dead in the same step.

        Never raises a ``BrokerError``: a holder that fails is logged and skipped (in
        ``failures``); unavailability ends the pass (``connection_lost``).
        """
        ...

    def recover_process(self, holder: str, options: RecoveryOptions,
                        relock: Relock | None = None) -> RecoveryReport:
        """Requeue the held jobs of ``holder``, which something outside the store vouches is
        dead (a supervisor saw the process exit): as :meth:`recover_orphans` does for one
        holder, without the liveness check (``threshold`` and ``scan`` are not used). It is
        an orphaning: counters are bumped, repeat orphans parked. Never raises a
        ``BrokerError`` (see the report)."""
        ...

    def bury_repeat_orphans(self, now: float, max_orphanings: int) -> list[str]:
        """File every parked repeat orphan into dead, with ``failed_at`` ``now`` and the
        error fields of ``cogworker.JobOrphanedError`` (the message names
        ``max_orphanings``); bytes that are not a job are kept in an unparseable wrapper.
        Each in one atomic step: dead written first, then the job removed, its orphan
        counter deleted and a failure counted. Returns the records as stored in dead (run
        death hooks and lock releases for them). A store error ends the walk (logged, never
        raised); what was filed before it is returned."""
        ...

    def file_unsettled(self) -> list[tuple[SortedSetName, str]]:
        """File every handed-over failure (:meth:`park`, :meth:`hand_over`) into its set and
        delete its job's orphan counter, each in one atomic step (written first, removed
        second); a record that cannot be read is moved to a quarantine (kept 30 days,
        logged). Returns the ``(set name, payload)`` pairs filed (run death hooks for those
        filed into dead). A store error ends the walk (logged, never raised)."""
        ...
