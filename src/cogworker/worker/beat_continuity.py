"""Whether this process's beats have been reaching the broker without a break, and since when.

The orphan check judges other processes by their beats, so it may judge only while its own
process could beat too. When its own beats broke off (the broker was away or frozen, this
process was paused, or the broker forgot its presence: a restart from an old snapshot, a
fail-over), every other process met the same break, and each needs a few beats of its own
after the broker returns before its last beat is fresh again. So the orphan check waits
until this process has beaten without a break for :data:`SETTLE_BEATS` beat intervals.

A break is any of:

- a failed beat;
- two successful beats more than :data:`MAX_GAP_BEATS` intervals apart, or one beat call
  that took that long (this process was paused, or the broker was frozen and answered late);
- the broker missing this process's presence record while its last write is still inside
  the record's TTL (the broker lost its recent writes, so everyone's records are stale).

Durations are measured on this process's monotonic clock: they compare this process's own
beats with each other. Every judgement of another process stays on the broker's clock.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Final

logger = logging.getLogger(__name__)

SETTLE_BEATS: Final = 3
"""Beat intervals without a break before the orphan check judges anyone: every other live
process makes three beat attempts in that time. The first may meet the broker still away,
the second a connection the broker's restart left stale, so the third is the margin."""

MAX_GAP_BEATS: Final = 3
"""Beat intervals between two successful beats (or within one beat call) that count as a
break. A loaded process beats a little late, never three intervals late."""

TTL_MARGIN: Final = 1.0
"""Seconds before the presence TTL runs out after which a missing record is no surprise."""


class BeatContinuity:
    """Records this process's beats; says how long they have run without a break.

    Thread-safe: the heartbeat thread records, the poller thread asks.
    """

    def __init__(self, heartbeat_interval: float, heartbeat_ttl: float, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._max_gap = MAX_GAP_BEATS * heartbeat_interval
        self.settle = SETTLE_BEATS * heartbeat_interval
        """Seconds of unbroken beats the orphan check waits for."""
        self._presence_ttl = max(1, math.ceil(heartbeat_ttl))  # as the broker stores it
        self._clock = clock
        self._lock = threading.Lock()
        self._last_start: float | None = None  # when the last successful beat call began
        self._last_end: float | None = None
        self._steady_since: float | None = None  # None: not steady (no beat since a break)
        self._broken = False

    def now(self) -> float:
        return self._clock()

    def beat_failed(self) -> None:
        """A beat did not reach the broker."""
        with self._lock:
            self._break("a beat failed")

    def beat_succeeded(self, started: float) -> None:
        """A beat that began at ``started`` (:meth:`now`) reached the broker."""
        ended = self._clock()
        with self._lock:
            first = self._last_end is None and not self._broken
            since = started if self._last_end is None else self._last_end
            broke = ended - since > self._max_gap
            if broke:
                self._break(f"no beat reached the broker for {ended - since:.0f} s")
            if self._steady_since is None:
                # the first beat of a process that met no trouble: it judges at once
                self._steady_since = -math.inf if first and not broke else ended
            self._broken = False
            self._last_start, self._last_end = started, ended

    def presence_expected(self) -> bool:
        """Whether the broker should still hold this process's presence record: written by
        a beat whose TTL has not yet run out."""
        with self._lock:
            start = self._last_start
        return (start is not None
                and self._clock() - start < self._presence_ttl - TTL_MARGIN)

    def presence_missing(self) -> None:
        """The broker lacks this process's presence record although it should hold it."""
        with self._lock:
            self._break("the broker lost this process's presence record (a restart from "
                        "an older snapshot, or a fail-over)")

    def steady_for(self) -> float:
        """Seconds this process has beaten without a break (0 while in one; inf since start
        when it never met one)."""
        with self._lock:
            if self._steady_since is None or self._last_end is None:
                return 0.0
            now = self._clock()
            if now - self._last_end > self._max_gap:
                return 0.0  # a beat is overdue: a break is under way
            return now - self._steady_since

    def settled(self) -> bool:
        """Whether the orphan check may judge other processes now."""
        return self.steady_for() >= self.settle

    def _break(self, why: str) -> None:
        if self._steady_since is not None:
            logger.info("beats broke off (%s); orphan checks wait for %.0f s of beats "
                        "before judging other processes", why, self.settle)
        self._steady_since = None
        self._broken = True
