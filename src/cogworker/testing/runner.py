"""Running one job in the caller's thread: unique start, the real server chain, lock release.

The chain and the call of ``perform`` are the worker's own
(:meth:`cogworker.worker.executor.JobRunner.perform_chain`); only the ``async def`` job is
run differently: on a fresh event loop in the caller's thread, or, when the caller is itself
inside a running loop (an async test), on a short-lived helper thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from cogworker.core.errors import TestingError
from cogworker.core.outage import OutageLog
from cogworker.core.payload import Payload, encode
from cogworker.worker.death import release_job_locks
from cogworker.worker.event_loop import EventLoopThread
from cogworker.worker.executor import JobRunner
from cogworker.worker.stats_buffer import StatsBuffer

if TYPE_CHECKING:
    from cogworker.app import App


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
    """Runs recorded or pushed payloads for one app, as a processor would, minus routing."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._async = CallerThreadLoop()

    def run(self, job: Payload) -> object:
        """Run ``job`` now; returns what ``perform`` returned, or raises what it raised.

        On success the job's unique and cron locks are released; on failure they are left
        to the caller, who decides between retry and dead.
        """
        if self.app.hooks.unique_job_starting(self.app, job) is False:
            raise TestingError(
                f"job {job.get('class')!r} jid={job.get('jid')} is unique while executing and "
                "another copy of it is running in this test right now (a job running itself "
                "inline?); a worker would postpone it: use fake mode to test that"
            )
        result = self._chain_runner().perform_chain(job, str(job["queue"]), encode(job))
        release_job_locks(self.app, job, "success")
        return result

    def _chain_runner(self) -> JobRunner:
        # Built per run so middleware added to the app since the last run is seen.
        outages = OutageLog()
        return JobRunner(self.app, outages, StatsBuffer(self.app.broker.stats, outages),
                         self._async)
