"""The job running in this context: ``cogworker.current_job()`` and progress reports.

The worker (and the inline and fake test modes, which run the same server chain) sets it
around each job's ``perform``, in a context variable, so it is right per thread and per
``async def`` job. A function job reaches its own status through it::

    @app.job
    def import_rows(path):
        job = cogworker.current_job()
        for done, row in enumerate(rows(path), 1):
            ...
            job.progress(100 * done / total, message=f"row {done}")

A job also sees here whether it was cancelled while running (``job.cancelled()``, true
once ``app.cancel(jid)`` reached its worker; see :mod:`cogworker.core.cancel_signal`)::

        if job.cancelled():
            return  # the run is settled as cancelled

``progress`` and ``store`` only hand the facts to the ``cogworker_job_progress`` hook (the
``status`` plugin buffers them), so they cost a dict update, not a Redis command.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogworker.core.cancel_signal import CancelSignal, current_signal
from cogworker.core.errors import JobCancelled, NoCurrentJobError

if TYPE_CHECKING:
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

MESSAGE_LIMIT = 1000
"""Characters of a progress message kept (the rest is cut)."""


@dataclass(frozen=True, slots=True)
class CurrentJob:
    """The job running here: its app, its payload, its status reports, and whether it was
    cancelled (``signal``: None when no cancellation plugin watches this run)."""

    app: PluginHost
    job: Payload
    signal: CancelSignal | None = None

    @property
    def jid(self) -> str:
        return str(self.job.get("jid"))

    def progress(self, pct: float, message: str | None = None) -> None:
        """Report how far along the job is: ``pct`` from 0 to 100, and what it is doing."""
        checked = check_pct(pct)
        text = None if message is None else str(message)[:MESSAGE_LIMIT]
        self.app.hooks.job_progress(self.app, self.job, checked, text, {})

    def cancelled(self) -> bool:
        """Whether this run was cancelled (``app.cancel``) since it started."""
        return self.signal is not None and self.signal.fired

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~cogworker.core.errors.JobCancelled` if this run was cancelled."""
        if self.signal is not None and self.signal.fired:
            raise JobCancelled(f"job {self.jid} was cancelled while running")

    def store(self, **fields: object) -> None:
        """Store ``fields`` with the job's status (values as strings; None drops one)."""
        stored = {name: str(value) for name, value in fields.items() if value is not None}
        if stored:
            self.app.hooks.job_progress(self.app, self.job, None, None, stored)


_CURRENT: contextvars.ContextVar[CurrentJob | None] = contextvars.ContextVar(
    "cogworker_current_job", default=None)


def check_pct(pct: object) -> float:
    """``pct`` as a float from 0 to 100, or a ValueError saying what is accepted."""
    if (isinstance(pct, bool) or not isinstance(pct, (int, float))
            or not math.isfinite(pct) or not 0 <= pct <= 100):
        raise ValueError(f"progress is a percentage from 0 to 100, not {pct!r}")
    return float(pct)


def current_job() -> CurrentJob:
    """The job running in this context; :class:`NoCurrentJobError` outside a job's run."""
    running = _CURRENT.get()
    if running is None:
        raise NoCurrentJobError(
            "cogworker.current_job() was called outside a job's run: call it from inside "
            "the job function (or code it calls) while a worker or a test mode runs it")
    return running


def running_job() -> CurrentJob | None:
    """The job running in this context, or None."""
    return _CURRENT.get()


@contextmanager
def running(app: PluginHost, job: Payload) -> Iterator[CurrentJob]:
    """Make ``job`` the current job for the block."""
    current, token = enter_job(app, job)
    try:
        yield current
    finally:
        leave_job(token)


def enter_job(app: PluginHost, job: Payload) -> tuple[CurrentJob, contextvars.Token[
        CurrentJob | None]]:
    """Make ``job`` the current job (a run starts); pass the token to :func:`leave_job`.
    :func:`running` without the generator, for the worker's per-job path."""
    current = CurrentJob(app, job, current_signal())
    return current, _CURRENT.set(current)


def leave_job(token: contextvars.Token[CurrentJob | None]) -> None:
    """The run ended: the job current before it is current again."""
    _CURRENT.reset(token)


async def run_as_current(current: CurrentJob, awaitable: Any) -> Any:
    """Await ``awaitable`` with ``current`` as the current job (an ``async def`` job runs
    on the event-loop thread, whose context is not the processor thread's); a cancellation
    reaches the job as the cancellation of this task."""
    if current.signal is not None:
        current.signal.attach_task(asyncio.current_task())
    token = _CURRENT.set(current)
    try:
        return await awaitable
    finally:
        _CURRENT.reset(token)
