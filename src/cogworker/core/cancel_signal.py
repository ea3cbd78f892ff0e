"""One run's cancellation signal: how a running job is told it was cancelled.

A cancellation plugin (the built-in ``cancel``) makes a :class:`CancelSignal` for each run
and makes it the current signal around the job (:func:`enter_signal`, then
:func:`leave_signal`); the current job
(:func:`cogworker.current_job`, ``Job.cancelled()``) reads it. :meth:`CancelSignal.fire`,
called from any thread, tells the run:

* its flag turns true at once (``job.cancelled()``);
* an ``async def`` job's task is cancelled on its event loop (``asyncio.CancelledError``
  inside the job);
* a sync job that opted in (``raise_in_thread``) gets :class:`JobCancelled` raised in its
  thread (CPython's ``PyThreadState_SetAsyncExc``, as the time limits do): it takes effect
  when that thread next runs Python code, and is withdrawn if the run ends first.

Only the jobs themselves can stop: a sync job that never looks at its flag runs to its end.
"""

from __future__ import annotations

import contextvars
import threading
from typing import TYPE_CHECKING

from cogworker.core.errors import JobCancelled

if TYPE_CHECKING:
    import asyncio


def raise_in_thread(thread_id: int, exc_type: type[BaseException] | None) -> None:
    """Schedule ``exc_type`` in thread ``thread_id`` (None withdraws a scheduled one)."""
    import ctypes  # here: the push path imports this module, and only a worker calls this

    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc_type) if exc_type else None)


class CancelSignal:
    """The cancellation flag of one run of job ``jid``, started on the calling thread."""

    __slots__ = ("_interrupted", "_lock", "_loop", "_running", "_task", "fired", "jid",
                 "raise_in_thread", "thread_id")

    def __init__(self, jid: str, *, raise_in_thread: bool = False) -> None:
        self.jid = jid
        self.raise_in_thread = raise_in_thread
        self.thread_id = threading.get_ident()
        self.fired = False
        self._running = True
        self._interrupted = False
        self._task: asyncio.Task[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def cancelled(self) -> bool:
        """Whether the run was told to stop."""
        return self.fired

    def attach_task(self, task: asyncio.Task[object] | None) -> None:
        """The run is this task (an ``async def`` job), on the running loop: a cancellation
        cancels it, at once if one came already."""
        if task is None:
            return
        with self._lock:
            self._task, self._loop = task, task.get_loop()
            if self.fired:
                task.cancel()

    def fire(self) -> bool:
        """Tell the run it was cancelled (see the module docstring); False when it had
        ended or was told already."""
        with self._lock:
            if self.fired or not self._running:
                return False
            self.fired = True
            if self._task is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(self._task.cancel)
            elif self.raise_in_thread:
                self._interrupted = True
                raise_in_thread(self.thread_id, JobCancelled)
        return True

    def end(self) -> None:
        """The run ended: later :meth:`fire` calls do nothing, and an exception scheduled
        in its thread that has not gone off yet is withdrawn."""
        with self._lock:
            self._running = False
            if self._interrupted:
                raise_in_thread(self.thread_id, None)


_SIGNAL: contextvars.ContextVar[CancelSignal | None] = contextvars.ContextVar(
    "cogworker_cancel_signal", default=None)


def current_signal() -> CancelSignal | None:
    """The signal of the run in this context, or None (no cancellation plugin)."""
    return _SIGNAL.get()


def enter_signal(signal: CancelSignal) -> contextvars.Token[CancelSignal | None]:
    """Make ``signal`` the current one (a run starts); pass the token to
    :func:`leave_signal`. Two calls rather than a context manager: this is on every job's
    path, and a generator-based one costs a microsecond."""
    return _SIGNAL.set(signal)


def leave_signal(token: contextvars.Token[CancelSignal | None], signal: CancelSignal) -> None:
    """The run ended: the signal before it is current again, and ``signal`` is ended."""
    _SIGNAL.reset(token)
    signal.end()
