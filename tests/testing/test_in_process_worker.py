"""``InProcessWorker.run_until_idle`` against the suite's real Redis."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from cogworker.api import DeadSet, Queue, RetrySet
from cogworker.app import App
from cogworker.core.errors import TestingError
from cogworker.testing import InProcessWorker


@pytest.fixture(params=["reliable", "basic"])
def app(request: pytest.FixtureRequest, redis_url: str, namespace: str,
        redis_client: redis.Redis) -> Iterator[App]:
    """An app on the test's namespace with the fetcher named by the parameter."""
    application = App(redis_url=redis_url, namespace=namespace, fetch=request.param,
                      concurrency=3, queues=("default", "low"))
    try:
        yield application
    finally:
        application.close()


def test_runs_jobs_and_the_jobs_they_push_until_idle(app: App) -> None:
    ran: list[tuple[str, int]] = []

    @app.job
    def count_down(n: int) -> None:
        ran.append(("count_down", n))
        if n > 0:
            count_down.perform_async(n - 1)

    @app.job(queue="low")
    async def note(n: int) -> None:
        ran.append(("note", n))

    count_down.perform_async(3)
    note.perform_async(7)

    assert InProcessWorker(app).run_until_idle(timeout=10) == 5
    assert sorted(ran) == [("count_down", n) for n in range(4)] + [("note", 7)]
    assert Queue(app, "default").size() == 0
    assert InProcessWorker(app).run_until_idle(timeout=10) == 0


def test_due_schedule_and_retry_entries_run_later_ones_wait(app: App) -> None:
    ran: list[str] = []

    @app.job(retry=0)
    def record(label: str) -> None:
        ran.append(label)

    @app.job(retry=2)
    def fail() -> None:
        raise RuntimeError("always")

    @app.job(retry=0)
    def give_up() -> None:
        raise RuntimeError("no retries")

    record.perform_at(time.time() - 5, "due")
    record.perform_in(3600, "later")
    fail.perform_async()
    give_up.perform_async()

    assert InProcessWorker(app).run_until_idle(timeout=10) == 3
    assert ran == ["due"]
    [retry] = list(RetrySet(app))
    assert retry.retry_count == 1
    assert [entry.klass for entry in DeadSet(app)] == [give_up.name]


def test_a_job_that_does_not_finish_in_time_is_reported(app: App) -> None:
    release = threading.Event()

    @app.job
    def stuck() -> None:
        release.wait(10)

    stuck.perform_async()
    worker = InProcessWorker(app, stop_timeout=0.2)
    try:
        with pytest.raises(TestingError, match=r"still busy after 0.5 s: .*running"):
            worker.run_until_idle(timeout=0.5)
    finally:
        release.set()


def test_refuses_to_run_while_pushes_are_faked(app: App) -> None:
    with app.testing.fake(), pytest.raises(TestingError, match="fake mode"):
        InProcessWorker(app).run_until_idle()
