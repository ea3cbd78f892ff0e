"""Cron entries under the test clock: every slot crossed by ``advance`` fires once.

No ticker and no claim: the test process is the whole fleet. Each slot's job is the one the
ticker would push (:func:`cogworker.periodic.firing.slot_payload`), pushed through the
normal client path, so it is recorded in fake mode and run at once in inline mode. As with
the real claim, an ``until_executed`` entry does not fire while a job of it recorded in
fake mode has not run yet (or is waiting for a retry).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cogworker.core.errors import TestingError
from cogworker.core.payload import new_jid
from cogworker.core.periodic_types import PeriodicEntry
from cogworker.periodic.cron import next_fire
from cogworker.periodic.firing import slot_payload
from cogworker.periodic.registration import all_entries

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.testing.recorded import RecordedJobs

logger = logging.getLogger("cogworker.testing")

SLOT_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class Slot:
    at: int
    order: int  # the entry's registration order, to fire simultaneous slots stably
    entry: PeriodicEntry


def slots_between(app: App, start: float, end: float, limit: int = SLOT_LIMIT) -> list[Slot]:
    """Every slot of every entry in ``(start, end]``, in time order."""
    slots: list[Slot] = []
    for order, entry in enumerate(all_entries(app)):
        moment = start
        count = 0
        while (slot := next_fire(entry, moment)) <= end:
            count += 1
            if count > limit:
                raise TestingError(
                    f"advancing to {end:.0f} crosses more than {limit} slots of cron entry "
                    f"{entry.cron!r} ({entry.job_name}); advance in smaller steps"
                )
            slots.append(Slot(int(slot), order, entry))
            moment = slot
    return sorted(slots, key=lambda item: (item.at, item.order))


def fire(app: App, slot: Slot, recorded: RecordedJobs) -> str | None:
    """Push the job of one slot; None when skipped (blocked, or a unique duplicate)."""
    entry = slot.entry
    if entry.until_executed and recorded.has_periodic(entry.pjid):
        logger.info("cron %s: slot %d skipped: the previous run (until_executed) has not "
                    "finished", entry.job_name, slot.at)
        return None
    payload = slot_payload(entry, slot.at, new_jid())
    pushed = app.push(payload)
    if pushed is None and entry.until_executed:
        app.hooks.release_periodic_lock(app, payload)
    return pushed
