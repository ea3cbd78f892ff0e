"""The ``cancel`` plugin with a real worker (its threads in this process) on a real Redis:
cancelled waiting jobs are removed and never run, a stored cancellation stops a job a
worker already fetched, and running jobs are told (async: CancelledError; sync:
``cancelled()``; ``cancel="raise"``: JobCancelled in the thread)."""

from __future__ import annotations

import asyncio
import threading
import time

import cogworker
from cogworker.api import DeadSet, Queue, RetrySet, ScheduledSet
from cogworker.api.cancel import CancelOutcome
from cogworker.app import App
from cogworker.core.broker import CANCELLATIONS, CancellationStore
from cogworker.core.errors import JobCancelled
from cogworker.plugins.cancel.watch import CancelWatch
from helpers.threaded_worker import WAIT, Countdown, working
from plugins.cancel.conftest import eventually


def state_of(app: App, jid: str) -> str | None:
    status = app.status(jid)
    return None if status is None else status.state


def nothing_left(app: App) -> bool:
    return (Queue(app, "default").size() == 0 and RetrySet(app).size() == 0
            and DeadSet(app).size() == 0 and ScheduledSet(app).size() == 0)


def test_a_cancelled_queued_job_is_removed_and_never_runs(app: App) -> None:
    done = Countdown(1)

    @app.job(name="note")
    def note(label: str) -> None:
        done.record(label)

    doomed = note.perform_async("doomed")
    assert doomed is not None
    result = app.cancel(doomed)
    assert (result.outcome, result.where) == (CancelOutcome.CANCELLED, "queue default")
    assert Queue(app, "default").size() == 0
    assert state_of(app, doomed) == "cancelled"
    note.perform_async("kept")
    with working(app):
        assert done.done.wait(WAIT)
    assert done.calls == ["kept"]
    assert nothing_left(app)


def test_a_cancelled_scheduled_and_a_cancelled_retrying_job_are_removed(app: App) -> None:
    attempts: list[str] = []

    @app.job(name="flaky", retry=3)
    def flaky(label: str) -> None:
        attempts.append(label)
        raise RuntimeError("fails on purpose")

    later = flaky.perform_in(3600, "later")
    failing = flaky.perform_async("failing")
    assert later is not None and failing is not None
    with working(app):
        eventually(lambda: RetrySet(app).size() == 1, lambda: attempts)
        assert app.cancel(failing).outcome is CancelOutcome.CANCELLED
        assert app.cancel(later).outcome is CancelOutcome.CANCELLED
    assert attempts == ["failing"]  # the retry never ran
    assert nothing_left(app)


def test_a_job_already_fetched_when_it_was_cancelled_is_dropped_at_start(app: App) -> None:
    """The stored cancellation is what stops a job that left its queue (a worker's
    prefetch, a job recovered from a dead process): recorded without a removal here."""
    ran = Countdown(1)

    @app.job(name="note")
    def note(label: str) -> None:
        ran.record(label)

    store = app.broker.extension(CANCELLATIONS)
    assert store is not None
    doomed = note.perform_async("doomed")
    assert doomed is not None
    store.cancel(doomed, time.time() + 60, time.time())  # nothing removed: still queued
    note.perform_async("kept")
    with working(app):
        assert ran.done.wait(WAIT)
        eventually(lambda: Queue(app, "default").size() == 0, lambda: "queue not drained")
        eventually(lambda: state_of(app, doomed) == "cancelled", lambda: app.status(doomed))
    assert ran.calls == ["kept"]
    assert nothing_left(app)


def test_a_running_async_job_is_cancelled_and_settled_as_cancelled(app: App) -> None:
    started, seen = threading.Event(), Countdown(1)

    @app.job(name="waits")
    async def waits() -> None:
        started.set()
        try:
            await asyncio.sleep(WAIT * 2)
        except asyncio.CancelledError:
            seen.record("CancelledError")
            raise

    jid = waits.perform_async()
    assert jid is not None
    with working(app):
        assert started.wait(WAIT)
        result = app.cancel(jid)
        assert result.outcome is CancelOutcome.SIGNALLED
        assert result.where.startswith("running on ")
        assert seen.done.wait(WAIT)
        eventually(lambda: state_of(app, jid) == "cancelled", lambda: app.status(jid))
    assert seen.calls == ["CancelledError"]
    assert nothing_left(app)  # not retried, not dead


def test_a_running_sync_job_sees_cancelled_and_stops(app: App) -> None:
    started, seen = threading.Event(), Countdown(2)

    @app.job(name="loops")
    def loops() -> None:
        started.set()
        job = cogworker.current_job()
        while not job.cancelled():
            time.sleep(0.01)
        seen.record("function")

    class Loops(cogworker.Job):
        def perform(self) -> None:
            while not self.cancelled():
                time.sleep(0.01)
            seen.record("class")

    app.job(Loops)
    function_jid = loops.perform_async()
    class_jid = Loops.perform_async()
    assert function_jid is not None and class_jid is not None
    with working(app):
        assert started.wait(WAIT)
        eventually(lambda: all(state_of(app, jid) == "working"
                               for jid in (function_jid, class_jid)),
                   lambda: [app.status(function_jid), app.status(class_jid)])
        assert app.cancel(function_jid).outcome is CancelOutcome.SIGNALLED
        assert app.cancel(class_jid).outcome is CancelOutcome.SIGNALLED
        assert seen.done.wait(WAIT)
        eventually(lambda: state_of(app, class_jid) == "cancelled",
                   lambda: app.status(class_jid))
    assert sorted(seen.calls) == ["class", "function"]
    assert state_of(app, function_jid) == "cancelled"
    assert nothing_left(app)


def test_the_raise_option_raises_job_cancelled_in_the_thread(app: App) -> None:
    started, seen = threading.Event(), Countdown(1)

    @app.job(name="busy", cancel="raise")
    def busy() -> None:
        started.set()
        try:
            while True:  # never looks at its flag
                time.sleep(0.01)
        except JobCancelled as exc:
            seen.record(type(exc).__name__)
            raise

    jid = busy.perform_async()
    assert jid is not None
    with working(app):
        assert started.wait(WAIT)
        assert app.cancel(jid).outcome is CancelOutcome.SIGNALLED
        assert seen.done.wait(WAIT)
        eventually(lambda: state_of(app, jid) == "cancelled", lambda: app.status(jid))
    assert seen.calls == ["JobCancelled"]
    assert nothing_left(app)


def test_finished_and_unknown_jobs_are_reported_as_such(app: App) -> None:
    done = Countdown(2)

    @app.job(name="note", retry=0)
    def note(fail: bool) -> None:
        done.record(fail)
        if fail:
            raise RuntimeError("to dead")

    finished, dead = note.perform_async(False), note.perform_async(True)
    assert finished is not None and dead is not None
    with working(app):
        assert done.done.wait(WAIT)
        eventually(lambda: DeadSet(app).size() == 1, lambda: done.calls)
        eventually(lambda: state_of(app, finished) == "complete",
                   lambda: app.status(finished))
    assert app.cancel(finished).outcome is CancelOutcome.TOO_LATE
    assert (app.cancel(dead).outcome, app.cancel(dead).where) == (CancelOutcome.TOO_LATE,
                                                                  "dead")
    unknown = app.cancel("0123456789abcdef01234567")
    assert (unknown.outcome, unknown.where) == (CancelOutcome.UNKNOWN, "")
    store = app.broker.extension(CANCELLATIONS)
    assert store is not None
    assert store.is_cancelled("0123456789abcdef01234567", time.time())  # kept in case
    assert not store.is_cancelled(finished, time.time())  # too late: nothing recorded


def test_an_announcement_heard_during_a_re_read_is_not_lost(app: App) -> None:
    """A re-read whose answer predates a cancellation must not forget that cancellation,
    heard meanwhile by announcement."""
    found = app.broker.extension(CANCELLATIONS)
    assert found is not None
    store: CancellationStore = found

    class SlowStore:
        """The store, with an announcement arriving between the read and its answer."""

        def __init__(self) -> None:
            self.watch: CancelWatch | None = None

        def active(self, now: float) -> dict[str, float]:
            answer = store.active(now)  # read before the cancellation was recorded
            assert self.watch is not None
            self.watch.note("late-jid")
            return answer

    slow = SlowStore()
    watch = CancelWatch(slow, 60.0, 30.0, time.time)  # type: ignore[arg-type]
    slow.watch = watch
    watch.refresh()
    assert watch.is_cancelled("late-jid")
