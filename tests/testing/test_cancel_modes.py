"""``app.cancel(jid)`` in the fake and inline test modes: the recorded jobs, the runs in the
test's own threads, and cancellations kept for a jid that turns up later."""

from __future__ import annotations

from typing import Any

import pytest

import cogworker
from cogworker.api.cancel import CancelOutcome
from cogworker.app import App
from cogworker.workflows import chain


class CancelLog:
    """Records ``cogworker_job_cancelled`` calls as ``(jid, when)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    @cogworker.hookimpl
    def cogworker_job_cancelled(self, app: Any, job: dict[str, Any], when: str) -> None:
        self.calls.append((str(job["jid"]), when))


@pytest.fixture
def cancels(app: App) -> CancelLog:
    log = CancelLog()
    app.hooks.plugin_manager.register(log, "test-cancel-log")
    return log


def test_fake_mode_a_recorded_job_is_removed_and_never_runs(
    app: App, cancels: CancelLog,
) -> None:
    ran: list[int] = []

    @app.job(name="work")
    def work(n: int) -> None:
        ran.append(n)

    with app.testing.fake():
        keep, gone = work.perform_async(1), work.perform_async(2)
        later = work.perform_in(60, 3)
        assert keep and gone and later
        result = app.cancel(gone)
        assert (result.outcome, result.where) == (CancelOutcome.CANCELLED, "queue default")
        assert app.cancel(later).where == "schedule"
        assert [job["jid"] for job in app.testing.jobs_of(work)] == [keep]
        assert app.testing.drain_all() == 1
    assert ran == [1]
    assert cancels.calls == [(gone, "before_start"), (later, "before_start")]


def _failed_once(app: App, *, retry: bool) -> str:
    """The jid of a job that failed once in fake mode (then a recorded retry, or dead)."""

    @app.job(name="fails", retry=retry)
    def fails() -> None:
        raise ValueError("not yet")

    jid = fails.perform_async()
    assert jid
    with pytest.raises(ValueError, match="not yet"):
        app.testing.perform_one(fails)
    return jid


def test_fake_mode_a_recorded_retry_is_cancelled(app: App) -> None:
    with app.testing.fake():
        jid = _failed_once(app, retry=True)
        assert app.cancel(jid).where == "retry"
        assert app.testing.jobs_of("fails") == []


def test_a_step_cancelled_before_its_push_is_dropped_when_it_would_start(
    app: App, cancels: CancelLog,
) -> None:
    ran: list[str] = []

    @app.job(name="first")
    def first() -> int:
        ran.append("first")
        return 1

    @app.job(name="second")
    def second(previous: int) -> None:
        ran.append("second")

    with app.testing.fake():
        run = chain(first.s(), second.s()).apply_async()  # every step has its jid now
        assert app.cancel(run.jids[1]).outcome is CancelOutcome.UNKNOWN  # not pushed yet
        assert app.testing.drain_all() == 1  # the first; the second is dropped at its start
    assert ran == ["first"]
    assert cancels.calls == [(run.jids[1], "before_start")]


def test_inline_mode_a_job_that_ran_is_too_late(app: App) -> None:
    @app.job(name="work")
    def work() -> None:
        pass

    with app.testing.inline():
        jid = work.perform_async()
        assert jid
        result = app.cancel(jid)
    assert (result.outcome, result.where) == (CancelOutcome.TOO_LATE, "ran in this test")


def test_a_dead_job_is_too_late(app: App) -> None:
    with app.testing.fake():
        jid = _failed_once(app, retry=False)
        assert app.cancel(jid).outcome is CancelOutcome.TOO_LATE
        assert app.cancel(jid).where == "dead"


@pytest.mark.parametrize("mode", ["fake", "inline"])
def test_a_running_job_is_told_and_settled_as_cancelled(
    app: App, cancels: CancelLog, mode: str,
) -> None:
    seen: list[object] = []

    @app.job(name="stops_itself", cancel="raise")
    def stops_itself() -> None:
        seen.append("started")
        app.cancel(cogworker.current_job().jid)  # JobCancelled is raised in this thread
        seen.append("not reached")

    @app.job(name="polite")
    def polite() -> None:
        me = cogworker.current_job()
        seen.append(app.cancel(me.jid).outcome)
        seen.append(me.cancelled())
        me.raise_if_cancelled()
        seen.append("not reached")

    with app.testing.fake() if mode == "fake" else app.testing.inline():
        first, second = stops_itself.perform_async(), polite.perform_async()
        if mode == "fake":
            assert app.testing.drain_all() == 2  # cancelled runs end, they do not fail
            assert app.testing.jobs == {} and app.testing.dead == []
    assert seen == ["started", CancelOutcome.SIGNALLED, True]
    assert cancels.calls == [(first, "while_running"), (second, "while_running")]


def test_clear_all_forgets_what_ran(app: App) -> None:
    @app.job(name="work")
    def work() -> None:
        pass

    with app.testing.inline():
        jid = work.perform_async()
        assert jid
        app.testing.clear_all()
        assert app.cancel(jid).outcome is CancelOutcome.UNKNOWN


def test_a_blank_jid_is_refused(app: App) -> None:
    with app.testing.fake(), pytest.raises(ValueError, match="names a job by its jid"):
        app.cancel("  ")
