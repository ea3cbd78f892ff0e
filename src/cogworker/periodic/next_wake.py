"""How long the cron ticker sleeps: until the earliest next fire time of its entries.

The ticker used to look every ``tick_interval`` seconds, so an every-second entry
(``* * * * * *``) fired once per interval (the most recent due slot only). It now sleeps
until the first slot of any entry comes due, just past it (:data:`PAST_SLOT`, so the slot
counts as due on the ticker's clock), and never longer than the tick interval, which stays
the bound for noticing a changed clock, a disabled entry or a rollback to retry. A tick
that finds no new slot makes no store call, so minute-level entries cost no more than
before; an every-second entry gets one look per second.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from cogworker.core.periodic_types import PeriodicEntry
from cogworker.periodic.cron import CronExpressionError, next_fire

PAST_SLOT: Final = 0.005
"""Seconds after a slot at which the ticker wakes for it."""
MIN_SLEEP: Final = 0.001


def seconds_until_next_slot(entries: Sequence[PeriodicEntry], now: float, cap: float) -> float:
    """Seconds from ``now`` until just past the earliest next fire time of ``entries``,
    at most ``cap``. An entry that never fires again is left out."""
    earliest = now + cap
    for entry in entries:
        try:
            due = next_fire(entry, now) + PAST_SLOT
        except CronExpressionError:  # never fires again (a date that never comes)
            continue
        earliest = min(earliest, due)
    return max(earliest - now, MIN_SLEEP)
