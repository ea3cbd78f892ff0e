"""How many fetched jobs a process keeps ready beyond its busy threads.

A thread that finishes a job and finds nothing fetched waits a whole round trip for the
next one. When the queue is deep, the Manager fetches ahead instead: it keeps about as
many jobs ready as its threads finish during one fetch round trip, so a thread that
frees up finds its next job at once and each fetch takes a full batch. Jobs kept ready are
held like running ones (reliable fetch only: recovery puts them back if the process dies).

The depth follows what the threads measure, so it never becomes Celery's prefetch that
starves long jobs: for jobs that take much longer than a round trip it is 0, and nothing
waits in a process that another process could have run. It is bounded by
:data:`MAX_READY`.
"""

from __future__ import annotations

import math
from typing import Final

MAX_READY: Final = 16
"""The most jobs kept ready beyond the busy threads, whatever the measures say."""
MIN_REFILL: Final = 8
"""A fetch ahead tops up to at least this many jobs (fewer with fewer threads, none when
the depth is 0): fetches of one or two jobs would cost more Redis commands per job than
they save in waiting."""
SMOOTHING: Final = 1 / 16
"""Weight of the newest measure in the moving averages."""


class PrefetchDepth:
    """Moving averages of a job's run time and of a fetch's round trip, and the depth of
    ready jobs they call for. Updated and read under the Manager's lock."""

    def __init__(self, threads: int) -> None:
        self._threads = max(threads, 1)
        self._run_seconds: float | None = None
        self._fetch_seconds: float | None = None

    def job_ran(self, seconds: float) -> None:
        self._run_seconds = _smoothed(self._run_seconds, seconds)

    def fetched(self, seconds: float) -> None:
        """A fetch that waited for nothing (jobs were there) took ``seconds``."""
        self._fetch_seconds = _smoothed(self._fetch_seconds, seconds)

    def low_water(self) -> int:
        """Fetch ahead when fewer jobs than this are ready: what the threads finish during
        one round trip. 1 until both averages are known (the first fetch ahead measures
        the round trip), 0 when jobs run much longer than a round trip."""
        if self._run_seconds is None or self._fetch_seconds is None:
            return 1
        wanted = self._threads * self._fetch_seconds / max(self._run_seconds, 1e-6)
        return min(math.floor(wanted + 0.5), MAX_READY // 2)

    def refill_to(self) -> int:
        """How many jobs a fetch ahead tops the ready jobs up to (0: don't fetch ahead;
        1 while the averages are not known yet, so a process of long jobs holds at most one
        extra job once, to measure)."""
        if self._run_seconds is None or self._fetch_seconds is None:
            return 1
        low = self.low_water()
        if low == 0:
            return 0
        # twice the low water: a fetch ahead brings about what is used while it travels
        return min(max(2 * low, min(MIN_REFILL, self._threads)), MAX_READY)


def _smoothed(average: float | None, sample: float) -> float:
    return sample if average is None else average + (sample - average) * SMOOTHING
