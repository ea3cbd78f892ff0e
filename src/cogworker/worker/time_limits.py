"""Job time limits inside one worker process: the ``time_limit`` option, ``job_time_limit``.

* An ``async def`` job runs as a task that is cancelled at its limit; the job then fails
  with :class:`~cogworker.core.errors.JobTimeoutError`.
* A sync job gets ``JobTimeoutError`` raised in its own thread at the limit (CPython's
  ``PyThreadState_SetAsyncExc``, as Dramatiq's time limit does), by one watchdog thread
  per process, started with the first limited job.

What this cannot do: an exception raised into a thread takes effect only when that thread
next runs Python code. A job blocked inside one C call (``time.sleep(600)``, a socket read
without a timeout, a catastrophic regular expression) is interrupted only when that call
returns; a job that catches ``Exception`` around its work swallows the timeout. Under
``cogworker run --processes`` the supervisor covers both: a job still running
``time_limit_grace`` seconds past its limit gets its child replaced
(:mod:`cogworker.supervisor.hard_limits`).

No exception ever escapes the limited region: when the job ends just as its limit fires,
the pending exception is withdrawn before the job's thread moves on.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cogworker.core.cancel_signal import raise_in_thread as _raise_in_thread
from cogworker.core.errors import JobTimeoutError

logger = logging.getLogger(__name__)

T = TypeVar("T")


def job_time_limit(job: Mapping[str, Any], default: float,
                   declared: Mapping[str, Any] | None = None) -> float | None:
    """The job's limit in seconds: the payload's ``time_limit`` (set at enqueue), else the
    one its registered definition declares (``declared``: its options), else ``default``
    (0: none)."""
    for source in (job, declared or {}):
        value = source.get("time_limit")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    return default if default > 0 else None


def timeout_error(label: str, limit: float) -> JobTimeoutError:
    return JobTimeoutError(f"{label} ran past its time limit of {limit:g} s; raise "
                           "time_limit on the job if it needs longer")


@dataclass(order=True)
class _Entry:
    deadline: float
    order: int
    thread_id: int = field(compare=False)
    active: bool = field(default=True, compare=False)
    fired: bool = field(default=False, compare=False)


class TimeLimits:
    """The watchdog of one process; shared by its processor threads."""

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    @contextmanager
    def sync_limit(self, limit: float | None, label: str) -> Iterator[None]:
        """Raise ``JobTimeoutError`` in this thread if the block runs past ``limit``."""
        if limit is None:
            yield
            return
        entry = _Entry(time.monotonic() + limit, next(self._order), threading.get_ident())
        with self._changed:
            heapq.heappush(self._entries, entry)
            self._start_watchdog()
            self._changed.notify()
        try:
            yield
        except JobTimeoutError as exc:
            if exc.args:
                raise  # the job's own
            raise timeout_error(label, limit) from None
        finally:
            with self._changed:
                entry.active = False
                if entry.fired:
                    _raise_in_thread(entry.thread_id, None)

    def _start_watchdog(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="cogworker-time-limits",
                                            daemon=True)
            self._thread.start()

    def _watch(self) -> None:
        with self._changed:
            while True:
                while self._entries and not self._entries[0].active:
                    heapq.heappop(self._entries)
                if not self._entries:
                    self._changed.wait()
                    continue
                wait = self._entries[0].deadline - time.monotonic()
                if wait > 0:
                    self._changed.wait(wait)
                    continue
                entry = heapq.heappop(self._entries)
                entry.fired = True
                logger.warning("time limit: raising JobTimeoutError in thread %d",
                               entry.thread_id)
                _raise_in_thread(entry.thread_id, JobTimeoutError)


async def run_limited(awaitable: Awaitable[T], limit: float | None, label: str) -> T:
    """Await ``awaitable`` as a task; cancel it and raise ``JobTimeoutError`` past ``limit``.

    A ``TimeoutError`` the job raises itself stays its own."""
    task = asyncio.ensure_future(awaitable)
    if limit is None:
        return await task
    done, _pending = await asyncio.wait({task}, timeout=limit)
    if task in done:
        return task.result()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception:
        logger.debug("%s raised while being cancelled at its time limit", label, exc_info=True)
    raise timeout_error(label, limit)
