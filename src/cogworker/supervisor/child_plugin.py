"""What ``cogworker run`` adds to its own worker process: a job budget and start-up recovery.

Registered by the run command on the app's plugin manager (not an entry point: it belongs
to the process, not to the fleet's plugin choice):

* ``max_jobs``: the process starts that many jobs, then stops gracefully: the jobs fetched
  ahead go back to their queues at once, the running ones finish, and it exits 0
  (:mod:`cogworker.worker.start_budget`); under a supervisor a replacement takes its slot,
  under systemd or Kubernetes the service manager restarts it.
* at start-up (after the first beat, before any fetch), the held jobs of this host's dead
  processes are put back at once (:mod:`.host_recovery`);
* a supervised child watches its parent: once the supervisor is gone (killed with SIGKILL,
  say), the child stops gracefully instead of running unsupervised for ever.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Final

from cogworker.core.markers import hookimpl
from cogworker.supervisor import lineage
from cogworker.supervisor.host_recovery import recover_dead_neighbours
from cogworker.worker.start_budget import StartBudget

if TYPE_CHECKING:
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.worker.launcher import Launcher

logger = logging.getLogger("cogworker.supervisor")

PLUGIN_NAME = "cogworker.process"
PARENT_WATCH_INTERVAL: Final = 1.0


class ProcessPlugin:
    """The hooks of one ``cogworker run`` process."""

    def __init__(self, launcher: Launcher, max_jobs: int | None) -> None:
        self._launcher = launcher
        self._stopping = threading.Event()
        self._max_jobs = max_jobs

    @hookimpl
    def cogworker_startup(self, worker: WorkerHandle) -> None:
        manager = self._launcher.manager
        if self._max_jobs is not None and manager is not None:  # before any job starts
            manager.start_budget = StartBudget(self._max_jobs, self._budget_spent)
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

    def _budget_spent(self) -> None:
        """The ``--max-jobs``-th job is starting: give back what was fetched ahead, fetch no
        more, and stop once the running jobs are done."""
        logger.info("recycling: %d jobs started (--max-jobs %d); stopping once they finish",
                    self._max_jobs, self._max_jobs)
        manager = self._launcher.manager
        if manager is not None:
            manager.quiet()
        self._launcher.request_stop()

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
