"""Acknowledging finished jobs in batches, off the processor threads.

A processor hands a finished job to the :class:`AckBatcher` and goes straight back to work;
one thread acknowledges whatever has gathered in a single round trip. The delivery contract
holds: until its ack is written a job stays on the in-progress list, so a crash in between
makes it run again (a crash is the one case the contract allows that), and a stop flushes
every pending ack before the process requeues anything.

A batch goes out as soon as the thread is free, with whatever gathered during the previous
round trip. Waiting a little for more acks would save round trips, but it would widen the
window in which a crash makes a job that already finished run again: a poison pill that
kills its process would take the job finished just before it down too, every time
(tried twice: ``docs/explanation/performance.md``, "After issue 23's hot-path work:
instructions per job", and "Issue 23 as of session 6").
"""

from __future__ import annotations

import collections
import logging
import threading

from cogworker.core.broker import UnitOfWork
from cogworker.worker.settlement import Settler

logger = logging.getLogger("cogworker.acker")

MAX_BATCH = 200


class AckBatcher:
    def __init__(self, settler: Settler, max_batch: int = MAX_BATCH) -> None:
        self._settler = settler
        self._max_batch = max_batch
        self._queue: collections.deque[UnitOfWork] = collections.deque()
        self._in_flight: list[UnitOfWork] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="cogworker-acker", daemon=True)
        self._thread.start()

    def submit(self, work: UnitOfWork) -> None:
        with self._cond:
            self._queue.append(work)
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
                count = min(len(self._queue), self._max_batch)
                self._in_flight = [self._queue.popleft() for _ in range(count)]
            try:
                self._settler.acknowledge_many(self._in_flight)
            except Exception:  # never let the acker die; the settler already logged
                logger.exception("acknowledging %d job(s) failed", len(self._in_flight))
            with self._cond:
                self._in_flight = []
                self._cond.notify_all()

    def stop(self, timeout: float = 10.0) -> None:
        """Write every pending ack, then end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.error("acks still pending after %.0fs at shutdown", timeout)
