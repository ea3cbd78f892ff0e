"""Starting one child and reading what the OS knows about it.

A child is a fresh interpreter (``fork`` + ``exec`` through :mod:`subprocess`) running the
supervisor's own ``cogworker run`` command line: nothing of the parent's memory, threads or
connections crosses, so the parent may hold a broker connection for recovery. The child
learns its supervisor, the random part of its identity and its slot from the environment
(:mod:`.lineage`), which lets the parent name the child's identity before it ever beats.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogworker.supervisor import lineage


@dataclass(slots=True)
class Child:
    """One running child in its slot."""

    slot: int
    process: subprocess.Popen[bytes]
    identity: str
    started: float = field(default_factory=time.monotonic)
    stopping: bool = False
    """The supervisor asked it to stop (a stop, restart or recycle): its exit is expected."""
    reason: str = ""
    """Why it was asked to stop, for the log line of its exit."""
    kill_at: float | None = None
    """When (monotonic) it gets a SIGKILL if still alive."""
    stuck: list[Mapping[str, Any]] = field(default_factory=list)
    """Jobs it ran past their hard time limit: filed as failed once it is dead."""

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def uptime(self) -> float:
        return time.monotonic() - self.started

    def send(self, signum: signal.Signals) -> None:
        """Send ``signum``; a child that is already gone is ignored."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signum)

    def ask_to_stop(self, reason: str, grace: float) -> None:
        """TERM (a graceful stop), and a SIGKILL if still alive ``grace`` seconds later."""
        if not self.stopping:
            self.stopping, self.reason = True, reason
            self.kill_at = time.monotonic() + grace
            self.send(signal.SIGTERM)


def spawn(slot: int, command: Sequence[str], supervisor: str,
          environment: Mapping[str, str | None] | None = None) -> Child:
    """Start a child in ``slot``; its identity is known from here on. ``environment``
    changes the inherited environment (a None value removes the variable)."""
    suffix = lineage.new_identity_suffix()
    env = {**os.environ, **lineage.child_environment(supervisor, suffix, slot)}
    for name, value in (environment or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    process = subprocess.Popen(list(command), env=env)
    host = os.environ.get("DYNO") or socket.gethostname()
    return Child(slot, process, f"{host}:{process.pid}:{suffix}")


def resident_memory_mb(pid: int, proc: Path = Path("/proc")) -> float | None:
    """The resident memory (``VmRSS``) of process ``pid`` in MiB, None where unknown."""
    try:
        text = (proc / str(pid) / "status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1]) / 1024
    return None
