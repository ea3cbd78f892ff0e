"""The flat contract the current implementations satisfy, while they move onto the facets.

``RedisBroker``, the built-in fetchers and the memory broker were written against these
Protocols: one flat ``LegacyBroker``, a ``LegacyFetcher`` without the recovery methods, and
``LockBackend`` on full key names. The engine is typed against them until it is moved onto
:class:`~cogworker.core.broker.composite.Broker` and
:class:`~cogworker.core.broker.fetcher.Fetcher`; new code never uses them, and this module
goes when nothing does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Literal, Protocol, runtime_checkable

from cogworker.core.broker.records import SortedSetName, UnitOfWork
from cogworker.core.broker.sets import GraduationReport
from cogworker.core.broker.subscription import Subscription


@runtime_checkable
class LegacyFetcher(Protocol):
    """Takes jobs off queues for one worker process. Made by the fetch-strategy hook.

    A fetcher is shared by every processor thread of the process and must be thread-safe.
    """

    name: str
    reliable: bool
    """True when a fetched job survives the death of this process (it stays on a list that
    orphan recovery walks); False when a job popped by a process that dies is lost."""

    def fetch(self, queues: Sequence[str], timeout: float, max_jobs: int = 1) -> list[UnitOfWork]:
        """Take up to ``max_jobs`` jobs, waiting up to ``timeout`` seconds for the first.

        ``queues`` is the configured weighted list (repetition = weight); the fetcher
        decides the order and skips paused queues (read fresh on every call). Each job is
        taken atomically: it is either still on its queue or (reliable fetchers) on this
        process's in-progress list, never nowhere.
        """
        ...

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        """The jobs are settled (done, or recorded in retry/dead): forget them.

        Raises a ``BrokerError`` when that cannot be written; the caller keeps the job as
        a pending settlement and tries again later. Never re-runs anything.
        """
        ...

    def give_back(self, work: UnitOfWork) -> bool:
        """Put a fetched job that did not start back at the head of its queue (atomic)."""
        ...

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        """File ``record`` into ``set_name`` and drop ``work`` in one atomic step.

        Used when a job ran and failed but the normal retry/dead write failed. Returns
        False when the job was no longer this process's to settle.
        """
        ...

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        """At shutdown: requeue every job still held (raws in ``finished`` are dropped,
        raws in ``keep`` stay held). Returns how many were requeued."""
        ...

    def close(self) -> None:
        """Release connections and threads. Idempotent."""
        ...


class LegacyBroker(Protocol):
    """Everything the engine asks of the message store.

    Every method raises :class:`cogworker.core.errors.BrokerUnavailableError` when the store
    cannot be reached and :class:`cogworker.core.errors.BrokerError` on any other failure,
    with the driver's exception as ``__cause__``.
    """

    # client side -------------------------------------------------------------------------
    def store(self, immediate: Sequence[tuple[str, str]],
              scheduled: Sequence[tuple[float, str]]) -> None:
        """Store jobs in one round trip: ``immediate`` (queue, raw) pairs are pushed onto
        their queues (queue registered in the same transaction), ``scheduled`` (at, raw)
        pairs go into the schedule set. All or nothing per call."""
        ...

    # worker side -------------------------------------------------------------------------
    def server_time(self) -> float:
        """The store's clock, in epoch seconds (liveness decisions use it)."""
        ...

    def server_version(self) -> tuple[int, ...]:
        """The server version, e.g. (7, 2, 4)."""
        ...

    def paused_queues(self) -> set[str]:
        """Names of paused queues, read fresh on every call."""
        ...

    def file_job(self, set_name: SortedSetName, score: float, raw: str) -> None:
        """Add ``raw`` to the retry or dead set. Dead is trimmed to its caps in the same
        step (oldest first). Raises when not written."""
        ...

    def record_outcomes(self, processed: int, failed: int, now: float) -> None:
        """Add to the stats counters and this hour's throughput (best-effort callers)."""
        ...

    def set_work(self, identity: str, tid: str, entry: str) -> None:
        """Record what processor ``tid`` of ``identity`` is running (workers hash)."""
        ...

    def clear_work(self, identity: str, tid: str) -> None: ...

    def replace_work(self, identity: str, entries: Mapping[str, str], ttl: float) -> None:
        """Replace the whole workers hash of ``identity`` (tid → entry JSON) in one step."""
        ...

    def graduate(self, set_name: Literal["schedule", "retry"], now: float,
                 limit: int) -> GraduationReport:
        """Move up to ``limit`` due entries onto their queues, each atomically (write the
        queue first, then remove from the set); an entry another process took is skipped;
        an invalid entry is buried in dead; an entry whose move fails is deferred 60 s."""
        ...

    def beat(self, identity: str, info: str, busy: int, quiet: bool,
             queues: Sequence[str], ttl: float, reliable: bool) -> None:
        """Write the presence hash (the write a beat cannot do without) and the secondary
        records (process set, queue registry, live queues, last beat on the store's clock
        for reliable processes). Raises only when presence could not be written."""
        ...

    def remove_process(self, identity: str) -> None:
        """Clean shutdown: remove presence, workers hash and registry entries."""
        ...

    def subscribe_signals(self, identity: str) -> AbstractContextManager[Subscription]:
        """Subscribe to this process's remote-control channel."""
        ...

    def publish_signal(self, identity: str, message: str) -> int:
        """Send ``quiet``, ``resume`` or ``stop`` to a process; returns receivers."""
        ...

    def close(self) -> None: ...


class LockBackend(Protocol):
    """Owner-checked locks: the value of a lock key is its owner's jid."""

    def acquire(self, key: str, owner: str, ttl: float) -> bool:
        """Set ``key`` to ``owner`` for ``ttl`` seconds if nobody holds it."""
        ...

    def extend(self, key: str, owner: str, ttl: float) -> bool:
        """Set the TTL to ``ttl`` only if ``owner`` still holds it (one atomic step)."""
        ...

    def release(self, key: str, owner: str) -> bool:
        """Delete ``key`` only if ``owner`` still holds it (one atomic step)."""
        ...

    def owner(self, key: str) -> str | None: ...
