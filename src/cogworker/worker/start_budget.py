"""A limit on how many jobs one worker process starts (``cogworker run --max-jobs N``).

The processor threads ask :meth:`StartBudget.take` before each fetched job starts. The
``limit``-th job to ask is the last one let through: its thread calls ``on_spent`` (which
quiets the process and asks for its graceful stop) before the job runs, so the jobs fetched
ahead go back to their queues instead of running, and every later ask is refused (the
caller gives that job back too). The process therefore starts exactly ``limit`` jobs, and a
stop waits for the ones still running as any stop does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class StartBudget:
    """Lets ``limit`` jobs start, then refuses; calls ``on_spent`` once, at the last one."""

    def __init__(self, limit: int, on_spent: Callable[[], None]) -> None:
        if limit < 1:
            raise ValueError(f"a start budget needs at least 1 job, not {limit}")
        self.limit = limit
        self._left = limit
        self._on_spent = on_spent
        self._lock = threading.Lock()

    def take(self) -> bool:
        """True: the caller may start its job (the budget counts it); False: spent, give
        the job back."""
        with self._lock:
            if self._left == 0:
                return False
            self._left -= 1
            spent = self._left == 0
        if spent:
            self._on_spent()
        return True

    @property
    def started(self) -> int:
        """Jobs let through so far."""
        with self._lock:
            return self.limit - self._left
