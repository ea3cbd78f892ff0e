"""The ``status`` plugin with a real worker: queued → working (progress) → complete,
retrying vs failed, interrupted at shutdown, the TTL, and the plugin left off."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

import cogworker
from cogworker.api import RetrySet, job_status, job_statuses
from cogworker.app import App
from cogworker.core.errors import NoCurrentJobError
from helpers.threaded_worker import WAIT, working
from plugins.status.conftest import eventually


def state_of(app: App, jid: str) -> str | None:
    status = app.status(jid)
    return None if status is None else status.state


def test_a_function_job_moves_through_its_states_with_its_progress(app: App) -> None:
    reached, gate = threading.Event(), threading.Event()

    @app.job(name="import_rows")
    def import_rows(count: int) -> None:
        job = cogworker.current_job()
        job.progress(50, message="half way")
        job.store(rows=count, skipped=None)
        reached.set()
        gate.wait(WAIT)

    jid = import_rows.perform_async(17)
    assert jid is not None
    queued = app.status(jid)
    assert queued is not None
    assert (queued.state, queued.class_name, queued.queue) == ("queued", "import_rows",
                                                              "default")
    try:
        with working(app):
            assert reached.wait(WAIT)
            eventually(lambda: state_of(app, jid) == "working", lambda: app.status(jid))
            running = app.status(jid)
            assert running is not None
            assert (running.pct, running.message, dict(running.fields)) == (
                50.0, "half way", {"rows": "17"})
            gate.set()
            eventually(lambda: state_of(app, jid) == "complete", lambda: app.status(jid))
    finally:
        gate.set()
    done = app.status(jid)
    assert done is not None and done.updated_at >= running.updated_at


def test_a_class_job_reports_progress_through_its_own_methods(app: App) -> None:
    @app.job
    class Report(cogworker.Job):
        def perform(self, pages: int) -> None:
            self.progress(100, f"{pages} pages")
            self.store(kind="monthly")

    jid = Report.perform_async(3)
    assert jid is not None
    with working(app):
        eventually(lambda: state_of(app, jid) == "complete", lambda: app.status(jid))
    status = app.status(jid)
    assert status is not None
    assert (status.pct, status.message, dict(status.fields)) == (100.0, "3 pages",
                                                                {"kind": "monthly"})


def test_progress_is_checked(app: App) -> None:
    failures: list[BaseException] = []

    @app.job(retry=False)
    def overdone() -> None:
        try:
            cogworker.current_job().progress(101)
        except ValueError as exc:
            failures.append(exc)
            raise

    jid = overdone.perform_async()
    assert jid is not None
    with working(app):
        eventually(lambda: state_of(app, jid) == "failed", lambda: app.status(jid))
    assert "percentage from 0 to 100, not 101" in str(failures[0])
    with pytest.raises(NoCurrentJobError, match="outside a job's run"):
        cogworker.current_job()


def test_a_scheduled_push_says_scheduled(app: App) -> None:
    @app.job
    def later() -> None:
        pass

    jid = later.perform_in(3600)
    assert jid is not None
    assert state_of(app, jid) == "scheduled"


class Flaky(cogworker.Job):
    """Fails every time; retried after an hour (so the test retries it by hand)."""

    retry = 2

    def perform(self) -> None:
        raise ValueError("flaky")

    def retry_in(self, count: int, exc: BaseException, job: Any) -> float:
        return 3600.0


def test_a_failing_job_is_retrying_then_failed_and_its_trail_grows(app: App) -> None:
    flaky = app.job(Flaky)
    jid = flaky.perform_async()
    assert jid is not None
    retries = RetrySet(app)
    with working(app):
        for attempt in (1, 2):
            eventually(lambda n=attempt: len(app.attempts(jid)) == n,  # type: ignore[misc]
                       lambda: app.attempts(jid))
            eventually(lambda: state_of(app, jid) == "retrying", lambda: app.status(jid))
            entry = retries.find(jid)
            assert entry is not None and entry.retry_now()
        eventually(lambda: state_of(app, jid) == "failed", lambda: app.status(jid))
        eventually(lambda: len(app.attempts(jid)) == 3, lambda: app.attempts(jid))
    trail = app.attempts(jid)
    assert [(a.attempt, a.outcome, a.error_class, a.error_message) for a in trail] == [
        (1, "retrying", "ValueError", "flaky"), (2, "retrying", "ValueError", "flaky"),
        (3, "dead", "ValueError", "flaky")]
    assert trail[0].failed_at <= trail[1].failed_at <= trail[2].failed_at
    status = app.status(jid)
    assert status is not None
    assert (status.error_class, status.error_message) == ("ValueError", "flaky")


@pytest.mark.parametrize(("answer", "outcome"), [("kill", "killed"), ("discard", "discarded")])
def test_a_job_killed_or_discarded_by_retry_in_is_failed(app: App, answer: str,
                                                         outcome: str) -> None:
    @app.job(name=f"Ended{answer}")
    class Ended(cogworker.Job):
        retry = 5

        def perform(self) -> None:
            raise RuntimeError("no point")

        def retry_in(self, count: int, exc: BaseException, job: Any) -> str:
            return answer

    jid = Ended.perform_async()
    assert jid is not None
    with working(app):
        eventually(lambda: len(app.attempts(jid)) == 1, lambda: app.attempts(jid))
        eventually(lambda: state_of(app, jid) == "failed", lambda: app.status(jid))
    assert [a.outcome for a in app.attempts(jid)] == [outcome]


def test_a_job_still_running_when_its_worker_stops_is_interrupted(app: App) -> None:
    started, gate = threading.Event(), threading.Event()

    @app.job
    def long_one() -> None:
        started.set()
        gate.wait(WAIT)

    jid = long_one.perform_async()
    assert jid is not None
    try:
        with working(app):  # timeout=1.0: the stop gives up on it after a second
            assert started.wait(WAIT)
        assert state_of(app, jid) == "interrupted"
        assert app.broker.queues.size("default") == 1  # and it was put back
    finally:
        gate.set()


def test_a_status_expires_after_its_ttl(redis_url: str, namespace: str) -> None:
    app = App(redis_url=redis_url, namespace=namespace, plugins=("status",),
              plugin_options={"status": {"ttl": 60}})
    try:
        @app.job
        def noted() -> None:
            pass

        jid = noted.perform_async()
        assert jid is not None
        now = time.time()
        assert job_status(app, jid, now=now + 59) is not None
        assert job_status(app, jid, now=now + 61) is None
    finally:
        app.close()


def test_without_the_plugin_nothing_is_written(redis_url: str, namespace: str) -> None:
    app = App(redis_url=redis_url, namespace=namespace)
    try:
        @app.job
        def plain() -> None:
            pass

        jid = plain.perform_async()
        assert jid is not None and app.status(jid) is None
    finally:
        app.close()


def test_a_bad_ttl_is_refused_at_start_up(redis_url: str, namespace: str) -> None:
    app = App(redis_url=redis_url, namespace=namespace, plugins=("status",),
              plugin_options={"status": {"ttl": 0}})
    try:
        with pytest.raises(cogworker.ConfigurationError, match=r"plugin_options\.status\.ttl"):
            app.hooks  # noqa: B018  # configuring the plugins checks their options
    finally:
        app.close()


def test_a_job_dropped_past_its_expiry_is_expired(app: App) -> None:
    @app.job
    def perishable() -> None:
        raise AssertionError("an expired job must not run")

    jid = perishable.set(expires_in=0.2).perform_async()
    assert jid is not None
    [raw] = app.broker.queues.page("default", 0, 1)
    expires_at = json.loads(raw)["expires_at"]
    eventually(lambda: app.clock() > expires_at, app.clock)
    with working(app):
        eventually(lambda: state_of(app, jid) == "expired", lambda: app.status(jid))


def test_a_bulk_push_writes_its_statuses_together(app: App) -> None:
    @app.job
    def many(number: int) -> None:
        pass

    jids = app.push_bulk(many, [[n] for n in range(50)])
    assert all(jids)
    eventually(lambda: len(job_statuses(app, [str(j) for j in jids])) == 50,
               lambda: len(job_statuses(app, [str(j) for j in jids])))
    assert {s.state for s in job_statuses(app, [str(j) for j in jids]).values()} == {"queued"}
