"""Acknowledging finished jobs in batches, off the processor threads.

A processor hands a finished job to the :class:`AckBatcher` and goes straight back to work;
one thread acknowledges whatever has gathered in a single round trip. That thread waits up
to :data:`LINGER` after the first ack of a batch for others to join it (or until
:data:`MAX_BATCH` have), so a busy process writes its acks in batches of many jobs: each
batch costs a round trip, and waking the thread costs a hand-off of the interpreter lock
between threads, which is much of a short job's CPU (``docs/explanation/performance.md``,
"Acks that wait for company"). The delivery contract holds: until its ack is written a job
stays on the in-progress list, so a crash in between makes it run again (a crash is the one
case the contract allows that), and a stop flushes every pending ack at once, before the
process requeues anything.
"""

from __future__ import annotations

import collections
import logging
import threading
import time

from cogworker.core.broker import UnitOfWork
from cogworker.worker.settlement import Settler

logger = logging.getLogger("cogworker.acker")

MAX_BATCH = 200
LINGER = 0.002
"""Seconds the first ack of a batch waits at most for others to share its round trip."""


class AckBatcher:
    def __init__(self, settler: Settler, max_batch: int = MAX_BATCH,
                 linger: float = LINGER) -> None:
        self._settler = settler
        self._max_batch = max_batch
        self._linger = linger
        self._queue: collections.deque[UnitOfWork] = collections.deque()
        self._in_flight: list[UnitOfWork] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="cogworker-acker", daemon=True)
        self._thread.start()

    def submit(self, work: UnitOfWork) -> None:
        with self._cond:
            self._queue.append(work)
            # wake the thread only where it waits: for a first ack, or a full batch
            if len(self._queue) == 1 or len(self._queue) == self._max_batch:
                self._cond.notify()

    def pending_raws(self) -> set[str]:
        """Finished jobs whose ack is not written yet (reconcile must not call them strays)."""
        with self._cond:
            return {w.raw for w in self._queue} | {w.raw for w in self._in_flight}

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue and self._stopping:
                    return
                self._gather()
                count = min(len(self._queue), self._max_batch)
                self._in_flight = [self._queue.popleft() for _ in range(count)]
            try:
                self._settler.acknowledge_many(self._in_flight)
            except Exception:  # never let the acker die; the settler already logged
                logger.exception("acknowledging %d job(s) failed", len(self._in_flight))
            with self._cond:
                self._in_flight = []
                self._cond.notify_all()

    def _gather(self) -> None:
        """(Holding the lock, with an ack queued.) Wait up to the linger for the batch to
        fill; a stop or a full batch ends the wait at once."""
        deadline = time.monotonic() + self._linger
        while len(self._queue) < self._max_batch and not self._stopping:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def stop(self, timeout: float = 10.0) -> None:
        """Write every pending ack, then end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.error("acks still pending after %.0fs at shutdown", timeout)
