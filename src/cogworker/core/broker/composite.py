"""``Broker``: one message store, made of the facets, and the optional extensions.

A broker is built by the broker plugin that owns the configured URL's scheme (the
``cogworker_make_broker`` hook); ``App.broker`` is one. Its facets are attributes:
``queues``, ``held``, ``sets``, ``processes``, ``locks``, ``periodic``, ``stats``.

Optional facets (history, metrics, limiters... of later issues) are reached through one
typed accessor, :meth:`Broker.extension`, with a key declared next to the facet's
Protocol::

    HISTORY = Extension[HistoryStore]("history", "finished jobs, newest first")

    history = broker.extension(HISTORY)   # HistoryStore | None, never getattr probing
    if history is not None:
        history.record(...)

A key rather than the Protocol class itself, because a type checker refuses a Protocol
where ``type[T]`` is expected (mypy's ``type-abstract``); the key carries the type.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from cogworker.core.broker.held import HeldJobStore
from cogworker.core.broker.locks import LockStore
from cogworker.core.broker.periodic import PeriodicStore
from cogworker.core.broker.processes import ProcessRegistry
from cogworker.core.broker.queues import QueueStore
from cogworker.core.broker.records import LocatePage
from cogworker.core.broker.sets import JobSets
from cogworker.core.broker.stats import StatsStore

T = TypeVar("T")

LOCATE_WINDOW = 2000
"""Entries one :meth:`Broker.locate` step looks at by default."""


@dataclass(frozen=True, eq=False)
class Extension(Generic[T]):
    """The key of an optional facet whose Protocol is ``T``.

    Declared once, next to the Protocol, and compared by identity: a broker supports an
    extension by keeping the key object it imported. ``name`` is for messages and
    listings (``"history"``); ``summary`` says in a few words what the facet holds.
    """

    name: str
    summary: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("an extension needs a name, e.g. Extension[HistoryStore]"
                             "('history', 'finished jobs')")


class Broker(Protocol):
    """Everything the engine, the built-in plugins, the API and the CLI ask of storage.

    Thread-safe: shared by every thread of a process. Every method raises
    :class:`~cogworker.core.errors.BrokerUnavailableError` when the store cannot be
    reached (retry later) and :class:`~cogworker.core.errors.BrokerError` on any other
    failure, with the driver's exception as ``__cause__``, translated inside the broker
    (callers never see a driver's exception), unless it says otherwise.
    """

    @property
    def name(self) -> str:
        """The broker's kind, as its plugin is named (``redis``, ``memory``)."""
        ...

    @property
    def queues(self) -> QueueStore:
        """The queues and pushes (:mod:`cogworker.core.broker.queues`)."""
        ...

    @property
    def held(self) -> HeldJobStore:
        """Jobs held by processes until settled, and recovering them."""
        ...

    @property
    def sets(self) -> JobSets:
        """The schedule, retry and dead sets (:mod:`cogworker.core.broker.sets`)."""
        ...

    @property
    def processes(self) -> ProcessRegistry:
        """Live processes, their running work, remote control."""
        ...

    @property
    def locks(self) -> LockStore:
        """Owner-checked locks (:mod:`cogworker.core.broker.locks`)."""
        ...

    @property
    def periodic(self) -> PeriodicStore:
        """The cron schedule, disabled entries and slot claims."""
        ...

    @property
    def stats(self) -> StatsStore:
        """Processed and failed counts, in total and per hour."""
        ...

    def server_time(self) -> float:
        """The store's clock, in epoch seconds: liveness decisions use it, so every process
        of a fleet agrees whatever its own clock says."""
        ...

    def server_version(self) -> tuple[int, ...] | None:
        """The server's version, e.g. ``(7, 2, 4)``; None for a store that has none (the
        memory broker). A version the server reports but that cannot be read counts as a
        modern server: ``(99,)``."""
        ...

    def server_info(self) -> dict[str, str | int | float]:
        """What the server says about itself, as one flat mapping for an operator's eyes
        (the dashboard's server panel; Redis: ``INFO``, nested sections as ``k=v,k=v``)."""
        ...

    def describe(self) -> str:
        """Where this broker connects, for log lines and messages, never with credentials
        (Redis: ``redis://host:6379/0``, ``unix:///run/redis.sock?db=0``). Never raises and
        never contacts the store."""
        ...

    def ping(self) -> bool:
        """True when the store answers, False when it cannot be reached; any other failure
        raises."""
        ...

    def locate(self, jids: Iterable[str], cursor: str | None = None, *,
               window: int = LOCATE_WINDOW) -> LocatePage:
        """Where the jobs with these jids are now, one bounded step at a time.

        With ``cursor`` None the running jobs are looked at first, whole (held jobs and
        running-work records: bounded by the fleet's threads); then each step looks at no
        more than ``window`` entries of the queues (by name), then retry, schedule and dead,
        and returns the jids found *in this step* with the cursor to go on from (None: every
        place was looked through). It stops early once every jid was found. A match is
        checked against the payload's own ``jid`` field. Nothing is atomic across places: a
        job moving meanwhile can be missed, so a caller acting on "nowhere" looks twice.
        A place whose stored value is unusable is skipped (logged). Empty ``jids``: nothing
        found, cursor None, no round trip. Raises ``ValueError`` for a malformed cursor or a
        ``window`` below 1.
        """
        ...

    def extension(self, key: Extension[T]) -> T | None:
        """The optional facet ``key`` names, or None when this broker does not provide it.
        Never raises, never contacts the store."""
        ...

    def close(self) -> None:
        """Release connections and background threads. Idempotent; a broker used again
        afterwards reconnects."""
        ...
