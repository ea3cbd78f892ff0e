"""``app.testing``: the test modes, the recorded jobs and the test clock of one app.

Modes (per app, shared by every thread, as the original's module-level mode):

* ``disabled`` (the default): pushes go to Redis;
* ``fake``: a push is recorded (see :mod:`cogworker.testing.recorded`) and nothing runs;
* ``inline``: a push runs the job at once in the caller's thread through the real server
  middleware chain; its exception reaches the caller; delays are ignored.

A push the memory broker makes itself, a batch's callback, is handled as the mode handles
a push: recorded in fake mode, run in inline mode once the job whose outcome fired it has
finished (at once when a batch's seal fired it).

Both fake and inline take over only the last step of a push, so the unique-lock hook and
the client middleware run, and the payload is serialized exactly as a real push would
serialize it (a non-JSON argument fails the same way). While either is in force the app's
broker is the app's own :class:`~cogworker.testing.memory_broker.MemoryBroker` on the test
clock, so unique locks work (a ``unique_for`` window ends when the test clock passes it)
and nothing touches Redis. Going back to disabled clears every lock that broker holds: a
lock taken in memory never outlives the modes that took it, even when jobs recorded
meanwhile are still there (a later fake block records a repeated push of them).

``fake()``, ``inline()``, ``disable()`` and ``freeze()`` apply at once; used as context
managers they also put the previous state back at the end of the block, also on error.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
import types
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Literal

from cogworker.core.job import Job, JobFunction
from cogworker.core.payload import Payload, decode, encode
from cogworker.testing.clock import Instant, TestClock, to_epoch, to_seconds
from cogworker.testing.cron import fire, slots_between
from cogworker.testing.fake import DRAIN_LIMIT, FakeRuns
from cogworker.testing.memory_broker import MemoryBroker
from cogworker.testing.recorded import RecordedJobs
from cogworker.testing.runner import CallerThreadRunner
from cogworker.worker.death import release_job_locks

if TYPE_CHECKING:
    from cogworker.api.cancel import CancelResult
    from cogworker.app import App
    from cogworker.core.broker import Broker
    from cogworker.core.client import Dispatcher
    from cogworker.core.middleware import PushContext

logger = logging.getLogger("cogworker.testing")

Mode = Literal["disabled", "fake", "inline"]
JobRef = str | JobFunction | type[Job]


class Restore:
    """What ``fake()``/``inline()``/``disable()``/``freeze()`` return: the change is already
    made; as a context manager it is undone at the end of the block (also on error)."""

    def __init__(self, testing: Testing, undo: Callable[[], None]) -> None:
        self._testing = testing
        self._undo = undo

    def __enter__(self) -> Testing:
        return self._testing

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: types.TracebackType | None) -> None:
        self._undo()


def job_name(job: JobRef) -> str:
    """The stored name of a job given as a name, an ``@app.job`` function or a Job class."""
    if isinstance(job, JobFunction):
        return job.name
    if isinstance(job, type) and issubclass(job, Job):
        return job._registration()[1].name
    if isinstance(job, str) and job:
        return job
    raise TypeError(f"expected a job (a name, an @app.job function or a Job class), not {job!r}")


class Testing:
    """The testing state of one app (see the module docstring)."""

    __test__ = False  # not a pytest test class

    def __init__(self, app: App) -> None:
        self.app = app
        self._lock = threading.RLock()
        self._mode: Mode = "disabled"
        self._saved: tuple[Broker | None, Dispatcher | None] = (None, None)
        self.recorded = RecordedJobs()
        self.clock = TestClock(app)
        self._memory = MemoryBroker(clock=self.clock.now)
        self._runner = CallerThreadRunner(app)
        self._fake = FakeRuns(app, self.recorded, self._runner)
        self._inline_runs = threading.local()  # depth, and callbacks due once it is 0

    # modes ---------------------------------------------------------------------------------
    @property
    def mode(self) -> Mode:
        return self._mode

    def fake(self) -> Restore:
        """Record pushed jobs instead of storing them; run them with ``drain``."""
        return self._switch("fake")

    def inline(self) -> Restore:
        """Run pushed jobs at once, in the caller's thread; their errors reach the caller."""
        return self._switch("inline")

    def disable(self) -> Restore:
        """Push to Redis again (the default mode)."""
        return self._switch("disabled")

    def _switch(self, mode: Mode) -> Restore:
        with self._lock:
            previous = self._mode
            self._apply(mode)
        return Restore(self, lambda: self._apply(previous))

    def _apply(self, mode: Mode) -> None:
        with self._lock:
            if mode == self._mode:
                return
            app = self.app
            if self._mode == "disabled":
                # The broker in force (private: None means "build from the settings later").
                self._saved = (app._broker, app.dispatch_override)
                app.use_broker(self._memory)
                app.dispatch_override = self._dispatch
                self._memory.state.route_broker_pushes = self._broker_pushed
            elif mode == "disabled":
                broker, override = self._saved
                if broker is None:
                    app.close()  # forget the memory broker: build from the settings later
                else:
                    app.use_broker(broker)
                app.dispatch_override = override
                self._saved = (None, None)
                self._memory.state.route_broker_pushes = None
                self._memory.clear_locks()
            self._mode = mode

    def _dispatch(self, ctx: PushContext) -> str | None:
        """The last step of a push in fake and inline mode (after lock and middleware)."""
        job = ctx.job
        if job.get("at") is None:
            job["enqueued_at"] = self.app.clock()
        stored = decode(encode(job))  # exactly what a real push would store
        if self._mode == "inline":
            self._run_inline(stored)
        else:
            self.recorded.add(stored)
        return str(job["jid"])

    def _broker_pushed(self, queue: str, raw: str) -> None:
        """A push the memory broker made itself (a batch's callback): recorded in fake
        mode; in inline mode run in the caller's thread, once the job whose outcome fired
        it has finished (at once when a batch's seal fired it)."""
        job = decode(raw)
        if self._mode == "fake":
            self.recorded.add(job)
        elif self._mode == "inline":
            runs = self._inline_runs
            if getattr(runs, "depth", 0):
                runs.due.append(job)
            else:
                self._run_inline(job)
        else:  # the modes ended meanwhile: the memory broker keeps it, as it would have
            with self._memory.state.lock:
                self._memory.state.onto_queue(queue, raw)

    def _run_inline(self, job: Payload) -> None:
        runs = self._inline_runs
        runs.depth = getattr(runs, "depth", 0) + 1
        if runs.depth == 1:
            runs.due = []
        try:
            if not self._runner.dropped(job):  # a cancelled jid is dropped, not run
                self._runner.run(job)
        except BaseException:
            release_job_locks(self.app, job, "dead")  # nothing will retry it
            raise
        finally:
            runs.depth -= 1
            if runs.depth == 0:
                self._run_due_callbacks(runs.due)

    def _run_due_callbacks(self, due: list[Payload]) -> None:
        """Run the callbacks fired while an inline run was under way (each may fire more,
        which it runs itself once it is done)."""
        while due:
            self._run_inline(due.pop(0))

    # recorded jobs (fake mode) -------------------------------------------------------------
    def jobs_of(self, job: JobRef) -> list[Payload]:
        """Copies of the payloads recorded for ``job``, oldest first."""
        return self.recorded.payloads(job_name(job))

    @property
    def jobs(self) -> dict[str, list[Payload]]:
        """Every recorded payload, by job name."""
        return self.recorded.by_name()

    @property
    def dead(self) -> list[Payload]:
        """Jobs that failed for good while drained (no retries left, or killed)."""
        return self._fake.dead

    def clear(self, job: JobRef) -> None:
        """Forget ``job``'s recorded payloads (their unique locks are released)."""
        self._release(self.recorded.clear(job_name(job)))

    def clear_all(self) -> None:
        """Forget every recorded payload and dead job, and every lock fake mode holds."""
        self._release(self.recorded.clear())
        self._fake.dead.clear()
        self._runner.forget_runs()
        self._memory.clear_locks()

    def cancel(self, jid: str) -> CancelResult:
        """``app.cancel(jid)`` in fake and inline mode (:mod:`cogworker.testing.cancel`)."""
        from cogworker.testing.cancel import cancel_in_test

        return cancel_in_test(self.app, jid, self.recorded, self._runner, self._fake.dead)

    def _release(self, payloads: list[Payload]) -> None:
        for payload in payloads:
            release_job_locks(self.app, payload, "discarded")

    def perform_one(self, job: JobRef) -> object:
        """Run the oldest due recorded job of ``job``; returns what it returned.

        Raises :class:`~cogworker.core.errors.EmptyQueueError` when none is due, and the
        job's own exception when it fails (after recording its retry, see
        :mod:`cogworker.testing.fake`).
        """
        with self._runs():
            return self._fake.perform_one(job_name(job))

    def drain(self, job: JobRef, *, limit: int = DRAIN_LIMIT) -> int:
        """Run ``job``'s due recorded jobs, also those they push, until none is due."""
        with self._runs():
            return self._fake.drain(job_name(job), limit)

    def drain_all(self, *, limit: int = DRAIN_LIMIT) -> int:
        """Run every due recorded job, oldest first, also those they push, until none is
        due; returns how many ran."""
        with self._runs():
            return self._fake.drain_all(limit)

    def _runs(self) -> AbstractContextManager[object]:
        """Recorded jobs run in fake mode when no mode is in force (after a ``with fake()``
        block), so what they push is recorded and nothing reaches Redis."""
        return self.fake() if self._mode == "disabled" else contextlib.nullcontext()

    # the clock -----------------------------------------------------------------------------
    @property
    def frozen(self) -> bool:
        return self.clock.frozen

    def now(self) -> float:
        """The test clock's time (real time when not frozen), epoch seconds."""
        return self.clock.now()

    def freeze(self, at: Instant | None = None) -> Restore:
        """Stop the clock at ``at`` (a datetime or epoch seconds; default: now)."""
        previous = self.clock.frozen_at()
        self.clock.set(self.clock.now() if at is None else to_epoch(at))
        return Restore(self, lambda: self.clock.set(previous))

    def unfreeze(self) -> None:
        """Let the app read real time again."""
        self.clock.set(None)

    def advance(self, seconds: float | dt.timedelta) -> list[str]:
        """Move the frozen clock forward (seconds or a timedelta).

        Every cron slot crossed fires once, in time order, with the clock at that slot;
        returns the jids of the cron jobs pushed. Scheduled jobs and retries whose ``at``
        is passed become due for ``drain``.
        """
        start = self.clock.require_frozen()
        end = start + to_seconds(seconds)
        pushed: list[str] = []
        for slot in slots_between(self.app, start, end):
            self.clock.set(float(slot.at))
            jid = fire(self.app, slot, self.recorded)
            if jid is not None:
                pushed.append(jid)
        self.clock.set(end)
        return pushed

    # housekeeping --------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the defaults: mode disabled, clock unfrozen, nothing recorded."""
        self._apply("disabled")
        self.unfreeze()
        self.clear_all()

    def __repr__(self) -> str:
        frozen = self.clock.frozen_at()
        clock = "real time" if frozen is None else f"frozen at {frozen}"
        count = sum(len(payloads) for payloads in self.jobs.values())
        return f"<Testing mode={self._mode} clock={clock} recorded={count} job(s)>"
