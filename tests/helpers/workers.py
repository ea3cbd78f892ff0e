"""Real worker processes for tests, and a job ledger kept outside the Redis under test.

A test writes an app module into its ``tmp_path`` (``write_app``), starts ``cogworker run``
subprocesses on it (``WorkerProcess``), and reads what ran from a SQLite ledger that the jobs
write to (``Ledger``): every start and finish, by jid and pid.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    jid TEXT, name TEXT, event TEXT, pid INTEGER, at REAL, detail TEXT
)
"""

# Imported by generated app modules: `from ledger_client import record`.
LEDGER_CLIENT = '''
import os, sqlite3, time

_PATH = os.environ["COGWORKER_TEST_LEDGER"]


def record(jid, name, event, detail=""):
    for _ in range(200):
        try:
            conn = sqlite3.connect(_PATH, timeout=30, isolation_level=None)
            try:
                conn.execute(
                    "INSERT INTO events (jid, name, event, pid, at, detail) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (jid, name, event, os.getpid(), time.time(), str(detail)),
                )
                return
            finally:
                conn.close()
        except sqlite3.OperationalError:
            time.sleep(0.01)
    raise RuntimeError("ledger stayed locked")
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
    def __init__(self, path: Path) -> None:
        self.path = path
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(LEDGER_SCHEMA)
        finally:
            conn.close()

    def events(self, event: str | None = None) -> list[Event]:
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            query = "SELECT jid, name, event, pid, at, detail FROM events"
            rows = (conn.execute(query + " WHERE event = ? ORDER BY id", (event,))
                    if event else conn.execute(query + " ORDER BY id"))
            return [Event(*row) for row in rows]
        finally:
            conn.close()

    def count(self, event: str) -> int:
        return len(self.events(event))


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
