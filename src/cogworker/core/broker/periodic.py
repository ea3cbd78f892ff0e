"""``broker.periodic``: what the fleet shares about cron entries, and the slot claim.

Entries are named by their pjid (:func:`cogworker.core.periodic_types.periodic_id`). The
store keeps the **published schedule** (what every ticker publishes at start, so tools see
the fleet's entries), the **disabled** entries, each entry's **last claimed slot**, and the
per-slot claim. An ``until_executed`` entry's **running lock** is an ordinary lock of
:mod:`.locks` named :func:`running_lock_name`, owned by the jid of the run that holds it:
the claim writes it, and the ``periodic-locks`` plugin keeps and releases it with the lock
store.

Cron entries are configuration (an app declares tens, not thousands): the schedule and the
disabled set are read whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from cogworker.core.periodic_types import ClaimResult, PeriodicEntry

RUNNING_LOCK_PREFIX = "periodic:running:"


def running_lock_name(pjid: str) -> str:
    """The lock name of entry ``pjid``'s running lock (``periodic:running:<pjid>``)."""
    if not pjid:
        raise ValueError("a cron entry's pjid must not be empty")
    return RUNNING_LOCK_PREFIX + pjid


class PeriodicStore(Protocol):
    """The cron records of one namespace. Thread-safe.

    Every method raises :class:`~cogworker.core.errors.BrokerUnavailableError` when the
    store cannot be reached and :class:`~cogworker.core.errors.BrokerError` on any other
    failure, the driver's exception as ``__cause__``, unless it says otherwise.
    """

    # the published schedule ------------------------------------------------------------
    def publish(self, entries: Sequence[PeriodicEntry], *, replace: bool) -> None:
        """Publish ``entries`` (by pjid: cron, job, args, retry, unique, queue) in one atomic
        step; with ``replace`` the schedule is exactly ``entries`` afterwards, else they are
        added to (or rewrite) what is there. Written in the original's format (a Ruby
        fleet reads it)."""
        ...

    def schedule(self) -> dict[str, PeriodicEntry]:
        """The published schedule by pjid. A record that cannot be read is left out and
        logged (it never hides the others)."""
        ...

    # enabling --------------------------------------------------------------------------
    def disabled(self) -> frozenset[str]:
        """The pjids of the disabled entries."""
        ...

    def is_disabled(self, pjid: str) -> bool:
        """Whether ``pjid`` is disabled, read afresh. ``BrokerUnavailableError`` propagates;
        a disabled set that cannot be read for another reason answers False (an entry fires
        rather than being silently skipped) and is logged."""
        ...

    def set_disabled(self, pjid: str, disabled: bool) -> bool:
        """Disable or enable ``pjid`` fleet-wide; True when that changed something."""
        ...

    # slots -----------------------------------------------------------------------------
    def last_slots(self, pjids: Iterable[str]) -> dict[str, int | None]:
        """Each entry's last claimed slot (epoch seconds; None: never claimed, or a value
        that is not a slot), read together. No pjids: {} without a round trip."""
        ...

    def prime_last_slot(self, pjid: str, slot: int) -> bool:
        """Set the last slot of ``pjid`` to ``slot`` only if it has none (atomic); True when
        this created it (the entry never fired: with catch-up off, ``slot`` is the baseline
        and does not fire)."""
        ...

    def claim_slot(self, pjid: str, slot: int, jid: str, *, until_executed: bool,
                   slot_lock_ttl: float, running_ttl: float) -> ClaimResult:
        """Claim ``slot`` of ``pjid`` for this process, fleet-wide, in one atomic step.

        ``BLOCKED`` (nothing written) when ``until_executed`` and the entry's running lock
        is held (a run of it has not finished). ``LOST`` when ``slot`` is not later than
        the last claimed slot, or another process claimed this slot first (a per-slot lock
        alive ``slot_lock_ttl`` seconds settles the race). ``WON`` otherwise: the last slot
        becomes ``slot`` (``previous_slot`` is what it was, None if none), and with
        ``until_executed`` the running lock is taken for ``jid`` for ``running_ttl``
        seconds in the same step, before the job exists, so even a fast job can release it.
        A slot fires at most once fleet-wide.
        """
        ...

    def rollback_claim(self, pjid: str, slot: int, previous_slot: int | None,
                       jid: str) -> bool:
        """Undo a won claim whose push failed, so a later tick claims ``slot`` again (one
        atomic step): the last slot goes back to ``previous_slot`` (``slot - 1`` when None)
        only while it still is ``slot``; the slot's claim lock is deleted, and the running
        lock too if ``jid`` owns it. True when the last slot was put back, False when a later
        slot was claimed since (the claim's locks are removed either way)."""
        ...
