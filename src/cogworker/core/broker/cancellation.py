"""``broker.extension(CANCELLATIONS)``: the cancelled jids, each kept until its expiry.

What the ``cancel`` plugin writes (``app.cancel``, ``cogworker cancel``) and every worker
reads. A cancellation is a jid and the time it expires (epoch seconds): while it lives, a
worker that fetches that jid drops it instead of running it. Recording a cancellation also
removes the job from where it waits (a queue, the schedule or the retry set), when the
caller found its exact stored entry, in **one atomic step: the record first, the removal
second** — so a failure in between leaves a job that will be dropped when fetched, never a
job that was removed without its cancellation on record. The same step announces the jid
to every subscriber (:meth:`CancellationStore.subscribe`), so running workers hear of it at
once; the announcement is a way to hear sooner, never the only way: workers re-read
:meth:`CancellationStore.active` on a timer as the backstop.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from cogworker.core.broker.composite import Extension
from cogworker.core.broker.subscription import Subscription

WaitingPlace = Literal["queue", "schedule", "retry"]
"""Where a job waits to run: on a queue, in the schedule, in the retry set."""
WAITING_PLACES: Final[tuple[WaitingPlace, ...]] = ("queue", "schedule", "retry")


@dataclass(frozen=True, slots=True)
class WaitingEntry:
    """A job's exact stored entry where it waits: ``raw`` in ``place`` (for a ``queue``,
    the queue ``queue``)."""

    place: WaitingPlace
    raw: str
    queue: str = ""

    def __post_init__(self) -> None:
        if self.place not in WAITING_PLACES:
            raise ValueError(f"a job waits on a queue, in the schedule or in the retry set, "
                             f"not in {self.place!r}")
        if self.place == "queue" and not self.queue:
            raise ValueError("a job waiting on a queue needs the queue's name")


class CancellationStore(Protocol):
    """The cancelled jids of one namespace. Thread-safe; raises the broker's errors
    (``BrokerUnavailableError``, ``BrokerError``); ``ValueError`` for an empty jid."""

    def cancel(self, jid: str, until: float, now: float,
               waiting: WaitingEntry | None = None) -> bool:
        """Record ``jid`` as cancelled until ``until``; then remove ``waiting`` (that exact
        entry), if given; then announce ``jid`` to the subscribers — one atomic step. The
        cancellations that expired by ``now`` are dropped in the same step. True when
        ``waiting`` was removed (False: none given, or it had moved: fetched, or gone)."""
        ...

    def is_cancelled(self, jid: str, now: float) -> bool:
        """Whether ``jid`` has a cancellation that has not expired by ``now``."""
        ...

    def active(self, now: float) -> dict[str, float]:
        """Every cancellation that has not expired by ``now``: jid → expiry. Sized by the
        cancellations of the last TTL (people cancel jobs one at a time)."""
        ...

    def withdraw(self, jid: str) -> bool:
        """Forget ``jid``'s cancellation (a job pushed again with that jid may run); True
        when there was one. Running workers forget it at their next re-read."""
        ...

    def subscribe(self) -> AbstractContextManager[Subscription]:
        """The announced jids from the moment the subscription is confirmed (see
        :class:`~cogworker.core.broker.subscription.Subscription`: messages sent while
        it is down are lost)."""
        ...


CANCELLATIONS: Final = Extension[CancellationStore](
    "cancellations", "cancelled jids with their expiry; removal of a waiting job; announcements")
"""The key of the cancellation facet: ``broker.extension(CANCELLATIONS)``."""


def require_jid(jid: str) -> str:
    """``jid``, or a ValueError when it is empty (every store checks the same way)."""
    if not isinstance(jid, str) or not jid:
        raise ValueError(f"a cancellation names a job by its jid, a non-empty string, "
                         f"not {jid!r}")
    return jid
