"""``broker.processes``: the live worker processes, what each runs, and remote control.

A process is live while its **presence record** exists: each beat rewrites it with a TTL
(``heartbeat_ttl``), so a process that stops beating disappears by itself. A process that
holds jobs (:mod:`.held`) also gets its **last beat** stamped on the store's clock, which
outlives the presence record: recovery declares it dead only when the presence is gone
*and* the last beat is older than the orphan threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from cogworker.core.broker.subscription import Subscription

SIGNALS = ("quiet", "resume", "stop")
"""The remote-control messages a worker process obeys."""


@dataclass(frozen=True, slots=True)
class ProcessRecord:
    """One live process as its last beat described it.

    ``info`` is what the process reported (``hostname``, ``pid``, ``concurrency``,
    ``queues``, ``started_at``, ``rss_kb``, ``version``, ``identity``); an unreadable one
    reads as {}. ``busy`` and ``quiet`` are its state at that beat. ``last_beat`` is the
    store-clock epoch of its last beat when it holds jobs (else None); ``expires_in`` the
    seconds its presence record has left (None: unknown).
    """

    identity: str
    info: Mapping[str, Any]
    busy: int
    quiet: bool
    last_beat: float | None = None
    expires_in: float | None = None


@dataclass(frozen=True, slots=True)
class WorkRecord:
    """What one processor thread runs: the queue, the payload, and when it started."""

    queue: str
    payload: Mapping[str, Any]
    run_at: float


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job running now: the process, its thread id, and the work."""

    identity: str
    tid: str
    work: WorkRecord


class ProcessRegistry(Protocol):
    """The processes of one namespace. Thread-safe.

    Every method raises :class:`~cogworker.core.errors.BrokerUnavailableError` when the
    store cannot be reached and :class:`~cogworker.core.errors.BrokerError` on any other
    failure, the driver's exception as ``__cause__``, unless it says otherwise.
    """

    # this process ----------------------------------------------------------------------
    def beat(self, identity: str, info: Mapping[str, Any], busy: int, quiet: bool,
             queues: Sequence[str], ttl: float, holds_jobs: bool) -> None:
        """One heartbeat of ``identity``.

        The presence record (``info``, ``busy``, ``quiet``, alive for ``ttl`` seconds) is
        the write a beat cannot do without: written atomically, and its failure raises.
        The secondary records follow: the process registered, ``queues`` registered and
        declared read by a live process now, its running-work record's TTL refreshed to
        ``ttl``, and with ``holds_jobs`` its holder registration and last beat (store's
        clock). A secondary record that fails for any reason but unavailability is logged
        and the beat still counts; unavailability raises.
        """
        ...

    def remove(self, identity: str) -> None:
        """Clean shutdown: drop the presence record, the running-work record and the
        registration. The holder registration and last beat stay while ``identity`` still
        holds jobs (recovery needs them to find those); when it holds none they go too.
        Each part independently: one that fails does not stop the others."""
        ...

    def set_work(self, identity: str, tid: str, work: WorkRecord) -> None:
        """Record what processor ``tid`` of ``identity`` runs now."""
        ...

    def clear_work(self, identity: str, tid: str) -> None:
        """Forget what processor ``tid`` ran (nothing to forget: no error)."""
        ...

    def replace_work(self, identity: str, works: Mapping[str, WorkRecord], ttl: float) -> None:
        """Replace everything ``identity`` runs (tid → work) in one atomic step, alive for
        ``ttl`` seconds (a dead process's record goes by itself). Empty ``works`` clears it."""
        ...

    # the fleet -------------------------------------------------------------------------
    def live(self) -> list[ProcessRecord]:
        """Every live process, by identity. Bounded by the fleet's size, so read whole (one
        round trip on Redis for the records). A registered process whose presence is gone
        is left out, and may be unregistered on the way."""
        ...

    def get(self, identity: str) -> ProcessRecord | None:
        """The live process ``identity``, or None."""
        ...

    def is_dead(self, identity: str, threshold: float) -> bool:
        """Whether ``identity`` counts as dead: no presence record, and no last beat within
        ``threshold`` seconds on the store's clock. A read, atomic with nothing after it:
        a recovery acting on it must re-check in its own atomic step."""
        ...

    def work(self, identity: str | None = None) -> list[RunningJob]:
        """What runs now on ``identity`` (its record, live or not: a stopping process reads
        its own), or with None on every live process; by identity, then thread id. Bounded
        by the fleet's threads, so read whole. An entry that cannot be read is left out
        (and logged)."""
        ...

    # remote control --------------------------------------------------------------------
    def signal(self, identity: str, message: str) -> int:
        """Send ``message`` (one of :data:`SIGNALS`) to ``identity``; returns how many
        subscribers received it (0: nobody listens now, and nothing is kept for later).
        Raises ``ValueError`` for another message."""
        ...

    def subscribe_signals(self, identity: str) -> AbstractContextManager[Subscription]:
        """Subscribe to ``identity``'s remote-control messages; confirmed when the context
        is entered, on a connection of its own."""
        ...
