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


def wait_current_child_idle(supervisor: WorkerProcess, timeout: float = 60.0) -> None:
    """Until the supervisor's newest child has started and has not reached its
    ``--max-jobs`` budget: every child started so far logged its start-up line, and all
    but the newest logged recycling (the newest, which ran the last jobs, may itself have
    reached its budget just then; its replacement is the idle one)."""
    def settled() -> bool:
        out = supervisor.output()
        children = len(_STARTED_CHILD.findall(out))
        return (len(_WORKER_STARTED.findall(out)) == children
                and out.count("recycling: ") == children - 1)

    wait_until(settled, timeout,
               lambda: f"no idle child after the jobs:\n{supervisor.output()[-4000:]}")


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
