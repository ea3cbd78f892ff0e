"""Running one job in the caller's thread: unique start, the real server chain, lock release.

The chain and the call of ``perform`` are the worker's own
(:meth:`cogworker.worker.executor.JobRunner.perform_chain`); only the ``async def`` job is
run differently: on a fresh event loop in the caller's thread, or, when the caller is itself
inside a running loop (an async test), on a short-lived helper thread.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from cogworker.core.errors import JobCancelled, TestingError
from cogworker.core.outage import OutageLog
from cogworker.core.payload import Payload, encode
from cogworker.worker.death import release_job_locks
from cogworker.worker.event_loop import EventLoopThread
from cogworker.worker.executor import JobRunner, cancelled_run_bookkeeping, dropped_at_gate
from cogworker.worker.stats_buffer import StatsBuffer

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.testing")


class CallerThreadLoop(EventLoopThread):
    """Runs a job's coroutine in the calling thread (see the module docstring)."""

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        with concurrent.futures.ThreadPoolExecutor(1, "cogworker-inline-async") as pool:
            return pool.submit(asyncio.run, coro).result()


class CallerThreadRunner:
    """Runs recorded or pushed payloads for one app, as a processor would, minus routing.

    It knows which jids run now and which have run (for ``app.cancel`` in the test modes,
    :mod:`cogworker.testing.cancel`) until :meth:`forget_runs`.
    """

    def __init__(self, app: App) -> None:
        self.app = app
        self._async = CallerThreadLoop()
        self._lock = threading.Lock()
        self._running: collections.Counter[str] = collections.Counter()
        self._ran: set[str] = set()

    def dropped(self, job: Payload) -> bool:
        """Whether a start gate drops ``job`` before it starts (a cancelled jid), as in a
        worker: the gate logged it and did its bookkeeping."""
        return dropped_at_gate(self.app.hooks.start_gate(self.app), job)

    def run(self, job: Payload) -> object:
        """Run ``job`` now; returns what ``perform`` returned, or raises what it raised.

        On success the job's unique and cron locks are released; on failure they are left
        to the caller, who decides between retry and dead. A run cancelled while it ran
        (``JobCancelled``) is settled as a worker settles it: locks released,
        ``cogworker_job_cancelled(..., "while_running")``, None returned, never retried. The
        caller asks :meth:`dropped` first.
        """
        if self.app.hooks.unique_job_starting(self.app, job) is False:
            raise TestingError(
                f"job {job.get('class')!r} jid={job.get('jid')} is unique while executing and "
                "another copy of it is running in this test right now (a job running itself "
                "inline?); a worker would postpone it: use fake mode to test that"
            )
        jid = str(job.get("jid"))
        with self._lock:
            self._running[jid] += 1
        try:
            result = self._chain_runner().perform_chain(job, str(job["queue"]), encode(job))
        except JobCancelled:  # app.cancel(jid) while it ran: settled as a worker settles it
            self._settle_cancelled(job)
            return None
        finally:
            with self._lock:
                self._running[jid] -= 1
                if self._running[jid] <= 0:
                    del self._running[jid]
                self._ran.add(jid)
        release_job_locks(self.app, job, "success")
        return result

    def _settle_cancelled(self, job: Payload) -> None:
        logger.warning("cancelled: %s jid=%s stopped while running; not retried",
                       job.get("class"), job.get("jid"))
        cancelled_run_bookkeeping(self.app, job)

    def is_running(self, jid: str) -> bool:
        with self._lock:
            return jid in self._running

    def has_run(self, jid: str) -> bool:
        with self._lock:
            return jid in self._ran

    def forget_runs(self) -> None:
        """Forget which jids have run (``app.testing.clear_all`` and ``reset``)."""
        with self._lock:
            self._ran.clear()

    def _chain_runner(self) -> JobRunner:
        # Built per run so middleware added to the app since the last run is seen.
        outages = OutageLog()
        return JobRunner(self.app, outages, StatsBuffer(self.app.broker.stats, outages),
                         self._async)
