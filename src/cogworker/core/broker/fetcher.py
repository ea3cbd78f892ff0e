"""``Fetcher``: a fetch strategy, everything the engine asks of it.

A fetcher is built per worker process by the fetch-strategy hook (``cogworker_make_fetcher``)
and is the *policy* of taking jobs: which queue first, how long to wait, where a taken job
waits until it is settled, and how the jobs of a process that died are recovered. The
atomic steps it needs are broker methods (:mod:`.queues`, :mod:`.held`). The engine calls
only what is declared here, never anything else (no attribute probing).

A strategy that holds nothing in the store (the built-in ``basic``) implements the holding
methods honestly: ``holds_jobs()`` is False, ``in_progress()`` is [], ``acknowledge`` has
nothing to drop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from cogworker.core.broker.held import RecoveryOptions, RecoveryReport
from cogworker.core.broker.records import SortedSetName, UnitOfWork


@runtime_checkable
class Fetcher(Protocol):
    """Takes jobs off queues for one worker process, settles them, recovers the dead's.

    Shared by every processor thread of the process: thread-safe. Methods that write raise
    :class:`~cogworker.core.errors.BrokerUnavailableError` or
    :class:`~cogworker.core.errors.BrokerError` (cause kept) when the write failed.
    """

    name: str
    """The strategy's name, as its plugin is named (``reliable``, ``basic``)."""

    reliable: bool
    """True when a job this process took survives its death (recovery puts it back);
    False when a job taken by a process that dies is lost. May turn False once, when a
    strategy falls back at run time (read it afresh)."""

    def holds_jobs(self) -> bool:
        """Whether jobs this process took wait in the store under its identity right now
        (the built-in ``reliable``: its held jobs, also after a fallback while some are
        left). The heartbeat asks on every beat: True makes the beat register this process
        as a holder and stamp its last beat, which keeps recovery away from its jobs."""
        ...

    def fetch(self, queues: Sequence[str], timeout: float, max_jobs: int = 1) -> list[UnitOfWork]:
        """Take up to ``max_jobs`` jobs, waiting up to ``timeout`` seconds for the first.

        ``queues`` is the configured weighted list (repetition = weight); the fetcher
        decides the order and skips paused queues (read afresh on every call). Each job is
        taken atomically: it is either still on its queue or (``reliable``) held by this
        process, never nowhere. Returns [] after the timeout, and at once after
        :meth:`close`. A ``timeout`` of 0 asks for the jobs there are now, waiting for
        none: the Manager fetches ahead so, from a ``reliable`` strategy only (one that
        cannot take without waiting may wait briefly). A ``BrokerUnavailableError`` may
        hide jobs the store handed out (a lost reply): a reliable strategy then holds them
        unknown to the caller, and :meth:`in_progress` shows them.
        """
        ...

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        """The jobs are settled (done, or their failure filed into retry or dead): forget
        them, in one round trip for all.

        Raises when that cannot be written; the caller keeps them as pending settlements
        and tries again later. Never re-runs anything.
        """
        ...

    def give_back(self, work: UnitOfWork) -> bool:
        """A fetched job that did not start goes back on its queue, where it runs next.

        True when put back; False, nothing written, when it was no longer this process's
        (a reliable job recovered elsewhere). Raises when it could not be written: a held
        job then stays held (the reconcile or recovery puts it back), a job that held
        nothing is lost with this process only if it dies before trying again.
        """
        ...

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        """File ``record`` (the job with its failure fields) into ``set_name`` with
        ``score`` and drop ``work``, in one atomic step: for a job that ran and failed and
        whose normal retry/dead write failed. False, nothing written, when the job was no
        longer this process's to settle."""
        ...

    def park_unsettled(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                       record: str) -> bool:
        """At shutdown, hand over a failure this process could not file: any live process
        files ``record`` into ``set_name`` with ``score`` later (the orphan check's
        unsettled filing); ``work`` is dropped in the same atomic step. The job already ran:
        it is never requeued. True when handed over; False when it was no longer this
        process's (nothing written). Raises when not written (the caller keeps it)."""
        ...

    def in_progress(self) -> list[str]:
        """The raws this process holds in the store, most recently taken first ([] for a
        strategy that holds nothing). The reconcile compares them with what its threads
        run: one held but run by nobody, twice in a row, is a stray and is given back."""
        ...

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        """At shutdown, once the threads stopped (or the timeout passed): put back every job
        this process took and did not finish. Raws in ``finished`` (done; only their
        acknowledgement failed) are dropped, raws in ``keep`` (failures still pending)
        stay; both count by occurrence. A strategy that holds nothing requeues what this
        process's running-work record lists (the Manager writes it just before), except
        those. Returns how many were requeued; raises when that failed."""
        ...

    def recover_orphans(self, own_identity: str, options: RecoveryOptions) -> RecoveryReport:
        """One pass of the orphan check, run by every process at start and then every
        ``orphan_check_interval``: put back the jobs dead processes left held in this
        strategy's way (never ``own_identity``'s), then file the repeat orphans into dead
        and the handed-over failures into their sets, each step isolated (one that fails is
        in ``report.failures`` and never skips the others).

        The built-in strategies, ``basic`` included, run ``broker.held``'s recovery: a fleet
        may mix strategies, and a fallback leaves held jobs behind. A replacement strategy
        that holds jobs elsewhere recovers those, and should run ``broker.held``'s too while
        a fleet may still hold jobs there. Never raises a ``BrokerError`` (see the report).
        """
        ...

    def recover_process(self, identity: str, options: RecoveryOptions) -> RecoveryReport:
        """Put back the jobs of process ``identity``, which something outside the store
        vouches is dead (a supervisor saw it exit): no liveness check. It is an orphaning
        (counters bumped, repeat orphans set aside). Never raises a ``BrokerError``."""
        ...

    def close(self) -> None:
        """Stop background threads and end waits early. Idempotent."""
        ...
