"""Real worker processes for tests, and a job ledger kept outside the Redis under test.

A test writes an app module into its ``tmp_path`` (``write_app``), starts ``cogworker run``
subprocesses on it (``WorkerProcess``), and reads what ran from a ledger that the jobs
write to (``Ledger``): every start and finish, by jid and pid.
"""

from __future__ import annotations

import heapq
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Imported by generated app modules: `from ledger_client import record`.
LEDGER_CLIENT = '''
import json, os, time

_DIR = os.environ["COGWORKER_TEST_LEDGER"]


def record(jid, name, event, detail=""):
    """Append one event to this process's own file, in one write(): threads never
    interleave, and a SIGKILL never leaves half a line behind."""
    line = json.dumps([jid, name, event, os.getpid(), time.time(), str(detail)]) + "\\n"
    path = os.path.join(_DIR, "events-%d.jsonl" % os.getpid())
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
'''


@dataclass(frozen=True)
class Event:
    jid: str
    name: str
    event: str
    pid: int
    at: float
    detail: str


class Ledger:
    """The events the test jobs recorded: a directory of append-only files, one per process.

    Not SQLite, which this was: with many processes writing at once, some SIGKILLed, a
    committed row once went missing (with no gap in the AUTOINCREMENT ids), most likely
    the WAL-reset bug SQLite documented in 2026. Appending lines needs no lock at all.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)

    def events(self, event: str | None = None) -> list[Event]:
        """Each process's events in the order it wrote them, the processes' merged by time."""
        per_process = [_read_events(file) for file in sorted(self.path.glob("events-*.jsonl"))]
        merged = heapq.merge(*per_process, key=lambda item: item.at)
        return [item for item in merged if event is None or item.event == event]

    def count(self, event: str) -> int:
        return len(self.events(event))


def _read_events(file: Path) -> list[Event]:
    lines = file.read_text(encoding="utf-8").split("\n")
    # The last piece is "" after a whole line, or a line still being written.
    return [Event(*json.loads(line)) for line in lines[:-1]]


def write_app(directory: Path, body: str, module: str = "jobapp") -> Path:
    """Write ``<module>.py`` (the ``body``, dedented) and the ledger client into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ledger_client.py").write_text(LEDGER_CLIENT, encoding="utf-8")
    (directory / f"{module}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    return directory


class WorkerProcess:
    """One ``cogworker run`` subprocess; its output goes to a log file in ``directory``."""

    counter = 0

    def __init__(self, directory: Path, app: str, args: Sequence[str] = (),
                 env: dict[str, str] | None = None) -> None:
        WorkerProcess.counter += 1
        self.directory = directory
        self.log_path = directory / f"worker-{WorkerProcess.counter}.log"
        self.command = [sys.executable, "-m", "cogworker", "run", "-A", app, *args]
        self.env = {**os.environ, "PYTHONPATH": str(directory), "PYTHONUNBUFFERED": "1",
                    **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(self.command, cwd=self.directory, env=self.env,
                                        stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def output(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_for_output(self, text: str, timeout: float = 30.0) -> None:
        wait_until(lambda: text in self.output(), timeout,
                   lambda: f"{text!r} never appeared in the worker log:\n{self.output()[-3000:]}")

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no cleanup runs, as when the kernel kills a process."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self, timeout: float = 40.0) -> int:
        """SIGTERM and wait; returns the exit status."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            self.process.kill()
            self.process.wait(timeout=10)
            raise AssertionError(
                f"worker did not stop in {timeout}s:\n{self.output()[-3000:]}") from exc

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def wait_until(condition: Callable[[], bool], timeout: float,
               message: Callable[[], str] | str = "condition not met") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(message() if callable(message) else message)
