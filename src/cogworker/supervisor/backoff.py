"""When a crashed child is started again: the original's back-off, per slot.

A child that lived less than :data:`HEALTHY_UPTIME` seconds adds one to its slot's crash
streak; one that lived longer resets the streak to zero. The delay before the respawn is 0
for a streak of 0 or 1, then doubles from 1 s up to :data:`MAX_DELAY`, so quick crashes in
a row wait 0, 1, 2, 4, 8, 16, 32, 60, 60, ... seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

HEALTHY_UPTIME: Final = 30.0
MAX_DELAY: Final = 60.0


def respawn_delay(streak: int) -> float:
    """Seconds to wait before respawning a slot whose crash streak is ``streak``."""
    if streak <= 1:
        return 0.0
    return min(2.0 ** (streak - 2), MAX_DELAY)


@dataclass(slots=True)
class CrashStreak:
    """The crash streak of one slot."""

    streak: int = 0

    def record_exit(self, uptime: float) -> float:
        """Count one unexpected exit after ``uptime`` seconds; returns the respawn delay."""
        self.streak = self.streak + 1 if uptime < HEALTHY_UPTIME else 0
        return respawn_delay(self.streak)
