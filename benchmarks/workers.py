"""A worker subprocess: started in its own session, its memory sampled, stopped for sure."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import psutil

_PR_SET_PDEATHSIG = 1
SAMPLE_INTERVAL = 0.05  # seconds between RSS samples
STOP_TIMEOUT = 15.0


class WorkerProcess:
    """Runs ``argv``; samples the RSS of it and all its children until stopped."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> None:
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.log_path = log_path
        self.peak_rss = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._stop_sampling = threading.Event()
        self._sampler: threading.Thread | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self.argv, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent_hook(),  # noqa: PLW1509 -- only a prctl() call
            )
        self._sampler = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)
        self._sampler.start()

    @property
    def exit_code(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM the worker and its children, SIGKILL what is left after ``STOP_TIMEOUT``."""
        process = self._process
        self._stop_sampling.set()
        if self._sampler is not None:
            self._sampler.join()
        if process is None:
            return
        family = _family(process.pid)
        for member in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.terminate()
        _, alive = psutil.wait_procs(family, timeout=STOP_TIMEOUT)
        for member in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()
        psutil.wait_procs(alive, timeout=STOP_TIMEOUT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_TIMEOUT)

    def _sample(self) -> None:
        assert self._process is not None
        try:
            root = psutil.Process(self._process.pid)
        except psutil.NoSuchProcess:
            return
        while not self._stop_sampling.wait(SAMPLE_INTERVAL):
            try:
                processes = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            total = 0
            for process in processes:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                    total += process.memory_info().rss
            self.peak_rss = max(self.peak_rss, total)


def _family(pid: int) -> list[psutil.Process]:
    """The process and its descendants (psutil.Process guards against reused pids)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


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
