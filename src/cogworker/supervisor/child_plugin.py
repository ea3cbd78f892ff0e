"""What ``cogworker run`` adds to its own worker process: a job budget and start-up recovery.

Registered by the run command on the app's plugin manager (not an entry point: it belongs
to the process, not to the fleet's plugin choice):

* ``max_jobs``: after that many jobs have finished, the process asks itself to stop
  gracefully (the other running jobs finish, unfinished ones go back to their queues) and
  exits 0; under a supervisor a replacement takes its slot, under systemd or Kubernetes the
  service manager restarts it.
* at start-up (after the first beat, before any fetch), the held jobs of this host's dead
  processes are put back at once (:mod:`.host_recovery`);
* a supervised child watches its parent: once the supervisor is gone (killed with SIGKILL,
  say), the child stops gracefully instead of running unsupervised for ever.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from cogworker.core.markers import hookimpl
from cogworker.core.middleware import JobContext, ServerMiddleware
from cogworker.supervisor import lineage
from cogworker.supervisor.host_recovery import recover_dead_neighbours

if TYPE_CHECKING:
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.plugin_host import PluginHost
    from cogworker.worker.launcher import Launcher

logger = logging.getLogger("cogworker.supervisor")

PLUGIN_NAME = "cogworker.process"
PARENT_WATCH_INTERVAL: Final = 1.0


class JobBudget:
    """Counts finished jobs; calls ``on_spent`` once, when ``limit`` of them finished."""

    def __init__(self, limit: int, on_spent: Callable[[], None]) -> None:
        self.limit = limit
        self._on_spent = on_spent
        self._finished = 0
        self._lock = threading.Lock()

    def middleware(self, ctx: JobContext, call_next: Callable[[], object]) -> object:
        try:
            return call_next()
        finally:
            self._count()

    def _count(self) -> None:
        with self._lock:
            self._finished += 1
            spent = self._finished == self.limit
        if spent:
            logger.info("recycling: %d jobs done (--max-jobs %d); stopping to be replaced",
                        self._finished, self.limit)
            self._on_spent()


class ProcessPlugin:
    """The hooks of one ``cogworker run`` process."""

    def __init__(self, launcher: Launcher, max_jobs: int | None) -> None:
        self._launcher = launcher
        self._stopping = threading.Event()
        self._budget = (JobBudget(max_jobs, launcher.request_stop)
                        if max_jobs is not None else None)

    @hookimpl
    def cogworker_server_middleware(self, app: PluginHost) -> ServerMiddleware | None:
        return self._budget.middleware if self._budget is not None else None

    @hookimpl
    def cogworker_startup(self, worker: WorkerHandle) -> None:
        fetcher = self._launcher.fetcher
        if fetcher is not None:
            recover_dead_neighbours(self._launcher.app, fetcher, worker.identity)
        child = lineage.current()
        if child is not None:
            threading.Thread(target=self._watch_parent, args=(child.parent_pid,),
                             name="cogworker-parent-watch", daemon=True).start()

    @hookimpl
    def cogworker_shutdown(self, worker: WorkerHandle) -> None:
        self._stopping.set()

    def _watch_parent(self, parent_pid: int) -> None:
        while not self._stopping.wait(PARENT_WATCH_INTERVAL):
            if os.getppid() != parent_pid:
                logger.warning("the supervisor (pid %d) is gone; stopping this child",
                               parent_pid)
                self._launcher.request_stop()
                return


def attach(launcher: Launcher, max_jobs: int | None) -> None:
    """Register this process's hooks on ``launcher``'s app."""
    launcher.app.hooks.plugin_manager.register(ProcessPlugin(launcher, max_jobs), PLUGIN_NAME)
