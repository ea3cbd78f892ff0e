"""The ``history`` plugin's recorder: one record per run, gathered in memory, written in batches.

The server middleware times each run and hands it to :class:`HistoryRecorder`, which
keeps it (a tuple, or a record already made: see the class) until a
:class:`~cogworker.core.background_flush.BackgroundFlush` thread, started with the worker,
writes them in one broker call a second (at most :data:`BATCH` records a call). Outside
a worker (no flush thread: inline test mode, a script running jobs by hand) each record is
written at once. A write that fails puts its
records back (at most ``max_buffered`` are kept, the oldest dropped) and is reported
through the flush thread's outage log: never to the job.
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from cogworker.core.background_flush import BackgroundFlush
from cogworker.core.broker import HistoryRecord, HistoryStore
from cogworker.core.broker.history import RunStatus
from cogworker.core.errors import JobCancelled, OverLimit
from cogworker.core.middleware import JobContext
from cogworker.core.payload import Payload, error_class, error_message
from cogworker.plugins.history.options import HistoryOptions

logger = logging.getLogger("cogworker.history")

BATCH: Final = 1000
"""Records one broker call writes, at most (a bigger buffer is written in several)."""
ELIDED: Final = "... {count} more line(s) not kept"
_ARGS_JSON: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=repr)
"""One encoder for every record (``json.dumps`` with options builds one per call)."""
DROP_REPORT_INTERVAL: Final = 60.0
"""Seconds between two warnings about dropped records."""


def capped_args(args: object, max_bytes: int) -> tuple[str, bool]:
    """The JSON text of ``args``, cut to ``max_bytes`` bytes on a character boundary; and
    whether it was cut."""
    try:
        text = _ARGS_JSON.encode(args)
    except (TypeError, ValueError, RecursionError):
        text = repr(args)
    data = text.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return text, False
    return data[:max_bytes].decode("utf-8", "ignore"), True


def capped_backtrace(exc: BaseException, max_lines: int, max_bytes: int) -> tuple[str, ...]:
    """The first ``max_lines`` lines of ``exc``'s traceback, whole lines up to ``max_bytes``
    bytes in all (a single longer line is cut); a last line says how many were left out."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    lines = text.rstrip("\n").split("\n")
    kept: list[str] = []
    used = 0
    for line in lines[:max_lines]:
        size = len(line.encode("utf-8", "replace")) + 1
        if used + size > max_bytes:
            if not kept and max_bytes > 0:
                kept.append(line.encode("utf-8", "replace")[:max_bytes].decode("utf-8",
                                                                              "ignore"))
            break
        kept.append(line)
        used += size
    if len(kept) < len(lines) and kept:
        kept.append(ELIDED.format(count=len(lines) - len(kept)))
    return tuple(kept)


def _no_nul(text: object) -> str:
    value = str(text) if text is not None else ""
    return value.replace("\x00", "\ufffd") or "?"


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
"""Argument types that a job cannot change in place: a run whose arguments are all of these
keeps them as a tuple, encoded by the writing thread."""

_Run = tuple[Payload, str, float, float, tuple[object, ...]]
"""A success as the middleware keeps it: payload, queue, started at (epoch s), seconds
taken, the arguments (scalars)."""


class HistoryRecorder:
    """Builds, buffers and writes the records of one process.

    A successful run whose arguments are scalars costs its thread one
    :meth:`collections.deque.append` of a tuple; the writing thread makes its record (the
    arguments' JSON, the run id, the checks of :class:`HistoryRecord`). A failure, or
    arguments a job could change in place (lists, dicts), are made into a record at once.
    """

    def __init__(self, store: HistoryStore, options: HistoryOptions,
                 clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._options = options
        self._clock = clock
        self._runs: deque[_Run | HistoryRecord] = deque()  # appended without a lock
        self._buffer: deque[HistoryRecord] = deque()
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._dropped = 0
        self._dropped_said_at: float | None = None
        # Run ids: a random prefix per recorder and a counter, unique without a syscall each.
        self._run_prefix = secrets.token_hex(6)
        self._run_numbers = itertools.count()
        self.flusher: BackgroundFlush | None = None

    # the middleware ---------------------------------------------------------------------
    def middleware(self, ctx: JobContext, call_next: Callable[[], object]) -> object:
        """Times the run and records it; the job's own result or exception passes through."""
        started_at, started = self._clock(), time.monotonic()
        try:
            result = call_next()
        except BaseException as exc:  # every failure of the job is a failed run, but
            # an inline limiter that was full: rescheduled, no run (as for a declared one)
            if not (isinstance(exc, OverLimit) and exc.reschedules(ctx.job)):
                self._record(ctx, started_at, time.monotonic() - started, exc)
            raise
        elapsed = time.monotonic() - started
        try:
            job = ctx.job
            args = job.get("args", [])
            if type(args) is list and all(type(arg) in _SCALARS for arg in args):
                self._keep((job, ctx.queue, started_at, elapsed, tuple(args)))
            else:
                self._record(ctx, started_at, elapsed, None)
        except Exception:  # bookkeeping never reaches the job
            logger.exception("history: could not record the run of jid=%s", ctx.job.get("jid"))
        return result

    def _record(self, ctx: JobContext, started_at: float, elapsed: float,
                exc: BaseException | None) -> None:
        try:
            record = self.build(ctx.job, ctx.queue, started_at, elapsed, exc)
            self.add(record)
        except Exception:  # bookkeeping never reaches the job
            logger.exception("history: could not record the run of jid=%s", ctx.job.get("jid"))

    def build(self, job: Payload, queue: str, started_at: float, elapsed: float,
              exc: BaseException | None) -> HistoryRecord:
        """The record of one run of ``job`` that started at ``started_at`` (epoch s) and
        took ``elapsed`` seconds; failed when ``exc`` is given."""
        return self._made(job, queue, started_at, elapsed, exc, job.get("args", []))

    def _made(self, job: Payload, queue: str, started_at: float, elapsed: float,
              exc: BaseException | None, arguments: object) -> HistoryRecord:
        options = self._options
        args, truncated = capped_args(arguments, options.args_max_bytes)
        started_ms = int(started_at * 1000)
        duration_us = max(0, int(elapsed * 1_000_000))
        status: RunStatus = ("success" if exc is None
                             else "cancelled" if isinstance(exc, JobCancelled) else "failed")
        return HistoryRecord(
            run_id=f"{self._run_prefix}{next(self._run_numbers):x}", jid=_no_nul(job.get("jid")),
            job_class=_no_nul(job.get("class")), queue=_no_nul(queue), status=status,
            started_ms=started_ms, finished_ms=started_ms + duration_us // 1000,
            duration_us=min(duration_us, 9_999_999_999_999), args=args,
            args_truncated=truncated,
            error_class=None if exc is None else error_class(exc),
            error_message=None if exc is None else error_message(exc),
            backtrace=() if exc is None else capped_backtrace(
                exc, options.backtrace_max_lines, options.backtrace_max_bytes),
        )

    def build_unrun(self, job: Payload, status: RunStatus, why: str) -> HistoryRecord:
        """The record of a job that ended without a run (``expired``, ``cancelled`` before
        it started): started and finished now, no duration, ``why`` as its message."""
        now_ms = int(self._clock() * 1000)
        args, truncated = capped_args(job.get("args", []), self._options.args_max_bytes)
        return HistoryRecord(
            run_id=f"{self._run_prefix}{next(self._run_numbers):x}", jid=_no_nul(job.get("jid")),
            job_class=_no_nul(job.get("class")), queue=_no_nul(job.get("queue")),
            status=status, started_ms=now_ms, finished_ms=now_ms, duration_us=0, args=args,
            args_truncated=truncated, error_message=why)

    def record_unrun(self, job: Payload, status: RunStatus, why: str) -> None:
        """:meth:`build_unrun` and :meth:`add`; a failure is logged, never raised."""
        try:
            self.add(self.build_unrun(job, status, why))
        except Exception:
            logger.exception("history: could not record the %s job jid=%s", status,
                             job.get("jid"))

    # the buffer -------------------------------------------------------------------------
    def add(self, record: HistoryRecord) -> None:
        """Keep ``record`` for the next write (written now when no flush thread runs)."""
        self._keep(record)

    def _keep(self, run: _Run | HistoryRecord) -> None:
        """Queue a run for the writing thread (at once when there is none; early when a
        batch is full); beyond ``max_buffered`` the oldest go."""
        runs = self._runs
        runs.append(run)
        size = len(runs)
        if size > self._options.max_buffered:
            with self._lock:
                self._drop_beyond_cap(runs)
        flusher = self.flusher
        if flusher is None or not flusher.running:
            self.flush()  # raises to _record, which logs: no thread to report it
        elif size >= BATCH:
            flusher.flush_soon()

    def _made_from_runs(self) -> None:
        """Turn the runs kept so far into records, at the end of the buffer (under
        ``_write_lock``); a run whose record cannot be made is logged and left out."""
        runs = self._runs
        made: list[HistoryRecord] = []
        for _ in range(len(runs)):  # runs added meanwhile wait for the next write
            try:
                run = runs.popleft()
            except IndexError:  # dropped meanwhile, beyond max_buffered
                break
            if isinstance(run, HistoryRecord):
                made.append(run)
                continue
            job, queue, started_at, elapsed, arguments = run
            try:
                made.append(self._made(job, queue, started_at, elapsed, None, arguments))
            except Exception:
                logger.exception("history: could not record the run of jid=%s",
                                 job.get("jid"))
        if made:
            with self._lock:
                self._buffer.extend(made)
                self._drop_beyond_cap(self._buffer)

    def _drop_beyond_cap(self, kept: deque[Any]) -> None:
        """Drop the oldest of ``kept`` beyond ``max_buffered`` (under ``_lock``), saying so
        once, then at most every :data:`DROP_REPORT_INTERVAL` seconds."""
        excess = 0
        while len(kept) > self._options.max_buffered:
            try:
                kept.popleft()
            except IndexError:  # the writing thread took the rest meanwhile
                break
            excess += 1
        if excess <= 0:
            return
        self._dropped += excess
        now = time.monotonic()
        if self._dropped_said_at is None or now - self._dropped_said_at >= DROP_REPORT_INTERVAL:
            self._dropped_said_at = now
            logger.warning("history: %d record(s) dropped so far: the broker could not take "
                           "them and at most plugin_options.history.max_buffered=%d are kept "
                           "(said again at most every %.0f s)", self._dropped,
                           self._options.max_buffered, DROP_REPORT_INTERVAL)

    def flush(self) -> None:
        """Write what is buffered, :data:`BATCH` records a call; on failure the unwritten
        records go back in front of the buffer and the error propagates."""
        with self._write_lock:
            self._made_from_runs()
            while True:
                with self._lock:
                    batch = [self._buffer.popleft()
                             for _ in range(min(BATCH, len(self._buffer)))]
                if not batch:
                    return
                try:
                    self._store.append(batch, self._options.retention)
                except BaseException:
                    with self._lock:
                        self._buffer.extendleft(reversed(batch))
                        self._drop_beyond_cap(self._buffer)
                    raise

    @property
    def buffered(self) -> int:
        """Runs kept and not written yet."""
        with self._lock:
            return len(self._buffer) + len(self._runs)
