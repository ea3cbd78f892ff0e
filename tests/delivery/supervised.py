"""Helpers for the supervisor tests: the children a supervisor's log names, and cleanup."""

from __future__ import annotations

import contextlib
import os
import re
import signal

from helpers.workers import WorkerProcess, wait_until

_WORKER_STARTED = re.compile(r"cogworker \S+ started identity=")
_STARTED_CHILD = re.compile(r"supervisor: started child pid=(\d+) slot=(\d+) identity=(\S+)")


def started_children(supervisor: WorkerProcess) -> list[tuple[int, int, str]]:
    """``(pid, slot, identity)`` of every child the supervisor logged starting, in order."""
    return [(int(pid), int(slot), identity)
            for pid, slot, identity in _STARTED_CHILD.findall(supervisor.output())]


def wait_children_started(supervisor: WorkerProcess, count: int,
                          timeout: float = 60.0) -> None:
    """Until ``count`` children have logged their start-up lines."""
    wait_until(lambda: len(_WORKER_STARTED.findall(supervisor.output())) >= count, timeout,
               lambda: f"{count} children never started:\n{supervisor.output()[-4000:]}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kill_all_children(supervisor: WorkerProcess) -> None:
    """SIGKILL every child the supervisor started (a test's cleanup; gone ones ignored)."""
    for pid, _slot, _identity in started_children(supervisor):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
