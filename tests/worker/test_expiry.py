"""Job expiry: ``expires_in`` / ``expires_at`` stamped at push, checked when fetched, and an
expired job dropped without running, on a real worker and in fake mode."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import cogworker
from cogworker.api import DeadSet, Queue, RetrySet
from cogworker.app import App
from cogworker.core.errors import JobDefinitionError, PayloadError
from cogworker.core.payload import Payload
from cogworker.testing import InProcessWorker

EXPIRED: list[tuple[str, float]] = []


@cogworker.hookimpl
def cogworker_job_expired(app: Any, job: Payload, late: float) -> None:
    """This module is also a plugin (``worker.test_expiry:``): it records each drop."""
    EXPIRED.append((str(job["jid"]), late))


@pytest.fixture(autouse=True)
def _forget_drops() -> Iterator[None]:
    EXPIRED.clear()
    yield
    EXPIRED.clear()


@pytest.fixture
def offline_app() -> App:
    return App(redis_url="redis://127.0.0.1:1/0", plugins=("worker.test_expiry:",))


def test_expires_in_becomes_an_absolute_time_counted_from_when_the_job_is_due(
        offline_app: App) -> None:
    @offline_app.job(expires_in=600)
    def notify(user_id: int) -> None: ...

    with offline_app.testing.fake(), offline_app.testing.freeze(at=1_000_000.0):
        notify.perform_async(1)
        notify.perform_in(3600, 2)
        notify.set(expires_in=30).perform_async(3)
        notify.set(expires_at=1_000_100.0).perform_async(4)
        stamped = {job["args"][0]: job for job in notify.jobs}
    assert stamped[1]["expires_at"] == 1_000_600.0
    assert stamped[2]["expires_at"] == 1_000_000.0 + 3600 + 600  # from its run time
    assert stamped[3]["expires_at"] == 1_000_030.0
    assert stamped[4]["expires_at"] == 1_000_100.0
    assert all("expires_in" not in job for job in stamped.values())


def test_a_job_that_would_expire_before_it_is_due_is_refused_at_enqueue(
        offline_app: App) -> None:
    @offline_app.job
    def notify() -> None: ...

    with offline_app.testing.fake():
        with pytest.raises(PayloadError, match=r"would expire at .* before it is due"):
            notify.set(expires_at=time.time() - 1).perform_async()
        with pytest.raises(PayloadError, match="before it is due"):
            notify.set(expires_at=time.time() + 60).perform_in(3600)
        assert notify.jobs == []


def test_expiry_options_are_checked_where_they_are_written(offline_app: App) -> None:
    with pytest.raises(JobDefinitionError, match=r"expires_in must be a finite number"):
        @offline_app.job(expires_in=0)
        def zero() -> None: ...
    with pytest.raises(JobDefinitionError, match=r"expires_at is a time for one call.*\.set"):
        @offline_app.job(expires_at=2_000_000_000)
        def fixed() -> None: ...

    @offline_app.job
    def fine() -> None: ...
    with pytest.raises(JobDefinitionError, match="expires_at"):
        fine.set(expires_at="tomorrow")


def test_fake_mode_drops_a_job_whose_time_passed_on_the_test_clock(offline_app: App) -> None:
    ran: list[int] = []

    @offline_app.job(expires_in=60)
    def notify(n: int) -> None:
        ran.append(n)

    with offline_app.testing.fake(), offline_app.testing.freeze(at=1_000_000.0):
        notify.perform_async(1)
        offline_app.testing.advance(30)
        notify.perform_async(2)
        offline_app.testing.advance(31)  # 1 is 1 s past its time, 2 has 29 s left
        assert notify.drain() == 1
    assert ran == [2]
    assert [late for _, late in EXPIRED] == [1.0]


@pytest.fixture
def app(redis_url: str, namespace: str) -> Iterator[App]:
    application = App(redis_url=redis_url, namespace=namespace, concurrency=2,
                      plugins=("worker.test_expiry:",))
    try:
        yield application
    finally:
        application.close()


def test_a_worker_drops_an_expired_job_and_runs_the_others(
        app: App, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    @app.job(name="notify", unique="until_executed")
    def notify(label: str) -> None:
        ran.append(label)

    stale = notify.set(expires_in=0.2).perform_async("stale")
    fresh = notify.set(expires_in=3600).perform_async("fresh")
    plain = notify.perform_async("plain")
    assert stale and fresh and plain
    stale_job = json.loads(Queue(app, "default").find(stale).raw)  # type: ignore[union-attr]
    time.sleep(max(0.0, stale_job["expires_at"] - time.time()) + 0.05)

    with caplog.at_level(logging.WARNING, logger="cogworker.job"):
        InProcessWorker(app).run_until_idle(timeout=10)

    assert sorted(ran) == ["fresh", "plain"]
    assert [jid for jid, _ in EXPIRED] == [stale]
    assert f"expired: notify jid={stale} on queue default" in caplog.text
    assert Queue(app, "default").size() == 0
    assert RetrySet(app).size() == 0
    assert DeadSet(app).size() == 0
    assert notify.perform_async("stale") is not None  # its unique lock was released
