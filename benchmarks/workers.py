"""Worker subprocesses: started in their own sessions, measured, stopped for sure.

A :class:`WorkerGroup` is one or more worker processes of one system (two ``cogworker run``
processes for the scaling runs). What it measures covers every process and all their
children: the RSS (sampled every 50 ms, peak and now), the CPU time used so far, and how
many bytes they have logged.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

_PR_SET_PDEATHSIG = 1
SAMPLE_INTERVAL = 0.05  # seconds between RSS samples
STOP_TIMEOUT = 15.0


class WorkerGroup:
    """Runs each of ``argvs`` with its own log file; measures them until stopped."""

    def __init__(self, argvs: Sequence[list[str]], env: dict[str, str], cwd: Path,
                 log_paths: Sequence[Path]) -> None:
        if len(argvs) != len(log_paths) or not argvs:
            raise ValueError("a worker group needs one log file per command, and a command")
        self.argvs = list(argvs)
        self.env = env
        self.cwd = cwd
        self.log_paths = list(log_paths)
        self.peak_rss = 0
        self._processes: list[subprocess.Popen[bytes]] = []
        self._stop_sampling = threading.Event()
        self._sampler: threading.Thread | None = None

    def start(self) -> None:
        for argv, log_path in zip(self.argvs, self.log_paths, strict=True):
            with log_path.open("ab") as log:
                self._processes.append(subprocess.Popen(
                    argv, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_die_with_parent_hook(),  # noqa: PLW1509 -- only a prctl() call
                ))
        self._sampler = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)
        self._sampler.start()

    @property
    def exit_code(self) -> int | None:
        """The exit code of the first worker process that has exited, if any has."""
        for process in self._processes:
            code = process.poll()
            if code is not None:
                return code
        return None

    def log_tail(self, lines: int = 15) -> str:
        tails = []
        for path in self.log_paths:
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            tails.append("\n".join(text.splitlines()[-lines:]))
        return "\n--- next worker ---\n".join(tails)

    def log_bytes(self) -> list[int]:
        """How long each worker's log file is now."""
        sizes = []
        for path in self.log_paths:
            try:
                sizes.append(path.stat().st_size)
            except FileNotFoundError:
                sizes.append(0)
        return sizes

    def log_lines_between(self, start: Sequence[int], end: Sequence[int]) -> int:
        """Lines written between two :meth:`log_bytes` readings, over every log file."""
        lines = 0
        for path, first, last in zip(self.log_paths, start, end, strict=True):
            with path.open("rb") as log:
                log.seek(first)
                lines += log.read(last - first).count(b"\n")
        return lines

    def cpu_seconds(self) -> float:
        """User + system CPU time used so far by every process of the group and its children."""
        total = 0.0
        for member in self._members():
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                times = member.cpu_times()
                total += times.user + times.system
        return total

    def current_rss(self) -> int:
        total = 0
        for member in self._members():
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                total += member.memory_info().rss
        return total

    def stop(self) -> None:
        """SIGTERM the workers and their children, SIGKILL what is left after ``STOP_TIMEOUT``."""
        self._stop_sampling.set()
        if self._sampler is not None:
            self._sampler.join()
        family = self._members()
        for member in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.terminate()
        _, alive = psutil.wait_procs(family, timeout=STOP_TIMEOUT)
        for member in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()
        psutil.wait_procs(alive, timeout=STOP_TIMEOUT)
        for process in self._processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_TIMEOUT)

    def _members(self) -> list[psutil.Process]:
        """Every worker process and its descendants (psutil guards against reused pids)."""
        members: list[psutil.Process] = []
        for process in self._processes:
            try:
                root = psutil.Process(process.pid)
                members += [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
        return members

    def _sample(self) -> None:
        while not self._stop_sampling.wait(SAMPLE_INTERVAL):
            self.peak_rss = max(self.peak_rss, self.current_rss())


def _die_with_parent_hook() -> Callable[[], None] | None:
    """On Linux, from the main thread: the kernel SIGTERMs the worker if the harness dies.

    The worker runs in its own session (so a Ctrl-C reaches only the harness, which then
    stops it in order); this keeps a killed harness from leaving it behind.
    """
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()
    sigterm = int(signal.SIGTERM)

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, sigterm)
        if os.getppid() != parent:  # the harness died before the call took effect
            os._exit(1)

    return hook
