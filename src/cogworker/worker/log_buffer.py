"""The CLI's log handler: job lines gathered in memory and written by a background thread.

A worker at thousands of jobs a second writes two lines per job (``start``, ``done``); one
``write`` and one flush per line is much of what logging costs it. Here those lines
(:meth:`BufferedLineHandler.job_line`, fed by :mod:`cogworker.worker.job_log`) are appended
to a list, and a daemon thread writes the whole list in one go at most
:data:`FLUSH_INTERVAL` after the first line of a batch arrived. So the bound on what a
sudden death (SIGKILL, the OOM killer) can lose is the job lines of the last
:data:`FLUSH_INTERVAL`. Everything else writes at once:

- any ``LogRecord`` (every other line, and the job lines when a handler of the user's is
  there too), with every line before it: rare lines, and the one before a crash matters;
- :meth:`BufferedLineHandler.flush` and :meth:`~BufferedLineHandler.close`, which
  ``logging.shutdown`` calls at interpreter exit (a graceful stop, ``sys.exit``, an
  exception reaching the top): nothing buffered is lost on any exit Python runs;
- a batch that reached :data:`MAX_BUFFERED` lines (a stream slower than the jobs).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Mapping
from typing import Any, TextIO

from cogworker.worker.log_format import LineFormatter, TextFormatter

FLUSH_INTERVAL = 0.1
"""Seconds a job line waits at most (plus scheduling) before it is written."""

MAX_BUFFERED = 5000
"""Lines after which the thread that adds one writes the batch itself."""


class BufferedLineHandler(logging.Handler):
    """Writes records to ``stream`` at once, job lines in batches from a daemon thread."""

    def __init__(self, stream: TextIO, formatter: LineFormatter | None = None,
                 owns_stream: bool = False) -> None:
        super().__init__()
        self.line_formatter: LineFormatter = formatter or TextFormatter()
        self.setFormatter(self.line_formatter)
        self.stream = stream
        self._owns_stream = owns_stream
        self._pid = os.getpid()
        self._pending: list[str] = []
        self._pending_lock = threading.Lock()
        self._write_lock = threading.Lock()  # keeps batches in order on the stream
        self._due = threading.Event()  # a batch has started
        self._closed = False
        self._flusher: threading.Thread | None = None  # started by the first batch
        _LIVE_HANDLERS.add(self)

    # adding lines --------------------------------------------------------------------------
    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
        except Exception:  # logging's contract: a handler never raises into the caller
            self.handleError(record)
            return
        with self._pending_lock:
            self._pending.append(line)
        self.flush()

    def job_line(self, created: float, level: str, name: str, message: str,
                 fields: Mapping[str, Any]) -> None:
        """A line that never became a record, formatted exactly as one would be."""
        self._add(self.line_formatter.line(created, level, self._pid, name, message,
                                           fields) + "\n")

    def _add(self, line: str) -> None:
        with self._pending_lock:
            self._pending.append(line)
            size = len(self._pending)
        if size >= MAX_BUFFERED or self._closed:  # closed: the flusher has ended
            self.flush()
        elif size == 1:
            if self._flusher is None:
                self._start_flusher()
            self._due.set()

    # writing -------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write every line added so far, now."""
        with self._write_lock:
            with self._pending_lock:
                batch, self._pending = self._pending, []
            if not batch or (self._closed and self._owns_stream):
                return
            try:
                self.stream.write("".join(batch))
                self.stream.flush()
            except Exception:
                _report_write_error(len(batch))

    def close(self) -> None:
        self.flush()
        with self._write_lock:
            self._closed = True
        self._due.set()  # lets the flusher see the close and end
        if self._owns_stream:
            self.stream.close()
        super().close()

    def _flush_batches(self) -> None:
        while True:
            self._due.wait()
            if self._closed:
                return
            time.sleep(FLUSH_INTERVAL)  # let the batch fill: one write for many lines
            self._due.clear()
            self.flush()

    def _start_flusher(self) -> None:
        self._flusher = threading.Thread(target=self._flush_batches, daemon=True,
                                         name="cogworker-log-flush")
        self._flusher.start()

    def _after_fork(self) -> None:
        """A forked child has this handler but not its thread (the child's first batch
        starts one); the parent's pending lines are the parent's to write."""
        self._pid = os.getpid()
        self._pending = []
        self._pending_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._due = threading.Event()
        self._flusher = None


_LIVE_HANDLERS: weakref.WeakSet[BufferedLineHandler] = weakref.WeakSet()


def _restart_after_fork() -> None:
    for handler in list(_LIVE_HANDLERS):
        handler._after_fork()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_restart_after_fork)


def _report_write_error(lines: int) -> None:
    """What ``logging.Handler.handleError`` says, for a batch rather than one record."""
    if not logging.raiseExceptions or sys.stderr is None:
        return
    try:
        sys.stderr.write(f"--- Logging error: {lines} buffered log line(s) not written ---\n")
        traceback.print_exc(file=sys.stderr)
    except OSError:  # stderr is gone too: nowhere left to say it
        pass
