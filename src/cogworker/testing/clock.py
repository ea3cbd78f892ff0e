"""The test clock: a frozen "now" that only moves when the test says so.

While frozen, the app's pushes read it (``at`` of ``perform_in``/``perform_at``,
``created_at``, ``enqueued_at``), fake mode's ``drain`` runs only jobs due by it and a
failed job's retry is due at ``now + back-off``. Unfrozen, the app reads ``time.time``.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from cogworker.core.errors import TestingError

if TYPE_CHECKING:
    from cogworker.app import App

Instant = float | int | dt.datetime


def to_epoch(at: Instant) -> float:
    """Epoch seconds; a naive datetime is local time, as ``datetime.timestamp`` reads it."""
    if isinstance(at, dt.datetime):
        return at.timestamp()
    if isinstance(at, bool) or not isinstance(at, (int, float)):
        raise TypeError(f"freeze(at=...) takes a datetime or epoch seconds, not {at!r}")
    return float(at)


def to_seconds(seconds: float | int | dt.timedelta) -> float:
    """A non-negative duration in seconds."""
    value = seconds.total_seconds() if isinstance(seconds, dt.timedelta) else seconds
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise TestingError(
            f"advance() takes seconds >= 0 or a timedelta, not {seconds!r}: the test clock "
            "only moves forward"
        )
    return float(value)


class TestClock:
    """One app's test clock. ``now`` is a float of epoch seconds, or None when not frozen."""

    __test__ = False  # not a pytest test class

    def __init__(self, app: App) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._now: float | None = None
        self._real: Callable[[], float] = time.time

    @property
    def frozen(self) -> bool:
        return self._now is not None

    def now(self) -> float:
        with self._lock:
            return time.time() if self._now is None else self._now

    def frozen_at(self) -> float | None:
        with self._lock:
            return self._now

    def set(self, now: float | None) -> None:
        """Freeze at ``now``, or unfreeze with None (the app reads its own clock again)."""
        with self._lock:
            if now is not None and self._now is None:
                self._real = self._app.clock
            self._now = now
            self._app.clock = self._real if now is None else self.now

    def require_frozen(self) -> float:
        with self._lock:
            if self._now is None:
                raise TestingError(
                    "the test clock is not frozen: call app.testing.freeze() (or "
                    "freeze(at=datetime)) before advancing it"
                )
            return self._now
