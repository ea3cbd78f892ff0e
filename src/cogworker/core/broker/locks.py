"""``broker.locks``: owner-checked locks with a time to live.

A lock has a **name** (chosen by the plugin that uses it: ``unique:<digest>``,
``periodic:running:<pjid>``...), an **owner** (by convention the jid of the job it is held
for) and a TTL. Names are relative to the broker's namespace: the broker maps them to its
own storage (Redis: the key ``<namespace>:<name>``, except that ``periodic:`` names keep the
original's cron key layout, see :meth:`cogworker.redis.keys.KeySchema.lock`), so two
namespaces never share a lock. Every change but :meth:`LockStore.delete` is owner-checked
in one atomic step, so a stale owner can never extend, release or shorten a lock that has
passed to a newer one.

A TTL is in seconds (> 0); a broker may round it up (Redis: to whole seconds, at least 1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class LockRecord:
    """A lock held now: its name, owner, and the seconds it has left (None: no expiry)."""

    name: str
    owner: str
    ttl: float | None


@dataclass(frozen=True, slots=True)
class LockPage:
    """One bounded step of :meth:`LockStore.scan`: the locks found, sorted by name, and
    where to go on (None when every lock under the prefix was looked at)."""

    locks: tuple[LockRecord, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class LockClaim:
    """A lock a requeue re-takes for the job it puts back, in the same atomic step.

    Re-taking means: missing, it is set to ``owner`` for ``ttl`` seconds; held by
    ``owner``, its TTL becomes ``ttl``; held by anyone else, it is left alone. The built-in
    ``periodic-locks`` plugin names an ``until_executed`` cron run's running lock this way
    (through the ``cogworker_requeue_lock`` hook), so a requeued run keeps its entry closed.
    """

    name: str
    owner: str
    ttl: float


Relock = Callable[[str], "LockClaim | None"]
"""Given the raw payload of a job about to go back on its queue, the one lock to re-take
with it, or None. Called on the caller's side, before the atomic step; it must not raise
(a broker treats an exception from it as None and logs it)."""


class LockStore(Protocol):
    """Owner-checked locks. Thread-safe.

    Every method raises :class:`~cogworker.core.errors.BrokerUnavailableError` when the
    store cannot be reached and :class:`~cogworker.core.errors.BrokerError` on any other
    failure (a name whose stored value is not a lock included), the driver's exception as
    ``__cause__``. Every method raises ``ValueError`` for an empty name.
    """

    def acquire(self, name: str, owner: str, ttl: float) -> bool:
        """Hold ``name`` for ``owner`` for ``ttl`` seconds if nobody holds it (atomic).
        False when it is held, also when ``owner`` itself holds it (see :meth:`retake`)."""
        ...

    def extend(self, name: str, owner: str, ttl: float) -> bool:
        """Set the TTL to ``ttl`` (longer or shorter) only if ``owner`` holds it (atomic).
        False when it is free or someone else's."""
        ...

    def retake(self, name: str, owner: str, ttl: float) -> bool:
        """Make sure ``owner`` holds ``name`` for ``ttl`` seconds (atomic): take it when it
        is free, refresh it when it is ``owner``'s. False, changing nothing, when someone
        else holds it."""
        ...

    def release(self, name: str, owner: str) -> bool:
        """Delete ``name`` only if ``owner`` holds it (atomic). False when it is free or
        someone else's."""
        ...

    def owner(self, name: str) -> str | None:
        """Who holds ``name`` now, or None."""
        ...

    def get(self, names: Sequence[str]) -> dict[str, LockRecord]:
        """The locks of ``names`` that are held now, read together (one round trip on
        Redis); names that are free, or hold something that is not a lock, are left out.
        Empty ``names``: {} without a round trip."""
        ...

    def scan(self, prefix: str, *, contains: str = "", cursor: str | None = None,
             limit: int = 50) -> LockPage:
        """Held locks whose name starts with ``prefix``, one bounded step at a time.

        ``contains`` keeps only names whose part after ``prefix`` contains it (ASCII
        case-insensitive). A step returns at most ``limit`` locks and does a bounded amount
        of work (Redis: a few ``SCAN`` calls sized to ``limit``), so it may return fewer,
        even none, with a ``next_cursor``: call again with it until it is None. ``cursor``
        None starts at the beginning; the cursor is opaque. A lock that exists for the whole
        scan is returned at least once (possibly twice); one created or released meanwhile
        may or may not be. Values that are not locks are skipped. Raises ``ValueError`` when
        ``limit`` is below 1.
        """
        ...

    def delete(self, name: str) -> bool:
        """Delete ``name`` whoever holds it (an operator's "clear"); True when it existed."""
        ...
