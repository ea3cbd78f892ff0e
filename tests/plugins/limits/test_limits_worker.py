"""The limits plugin through a real worker runtime (Launcher threads, real Redis)."""

from __future__ import annotations

import threading
import time
from typing import Any

from cogworker.api import RetrySet, ScheduledSet
from cogworker.api.metrics import Metrics
from helpers.threaded_worker import WAIT, Countdown, working
from helpers.workers import wait_until
from plugins.limits.conftest import MakeApp


def items(entries: ScheduledSet | RetrySet) -> list[dict[str, Any]]:
    """The payloads in a set (none here is unparseable)."""
    found = [entry.item for entry in entries]
    assert all(item is not None for item in found)
    return [item for item in found if item is not None]


def test_over_limit_jobs_use_no_retry_and_never_block_a_thread(make_app: MakeApp) -> None:
    """2 threads, a concurrent(1) class whose first job holds its slot until released,
    and an unlimited class: the unlimited jobs keep flowing while the limited ones are
    rescheduled, and no rescheduled job spent a retry."""
    app = make_app(concurrency=2)
    gate = threading.Event()
    holding = threading.Event()
    limited_runs = Countdown(3)
    free_runs = Countdown(20)

    @app.job(limits=[app.limiter.concurrent("export", 1)])
    def export(number: int) -> None:
        if number == 0:
            holding.set()
            assert gate.wait(WAIT)
        limited_runs.record(number)

    @app.job
    def free(number: int) -> None:
        free_runs.record(number)

    export.perform_async(0)
    with working(app):
        assert holding.wait(WAIT), "the first export never started"
        for number in (1, 2):
            export.perform_async(number)
        wait_until(lambda: app.limits.get("export").over >= 2, WAIT,
                   "the other exports were never refused")
        for number in range(20):
            free.perform_async(number)
        # One thread holds the export slot; the other runs all 20 free jobs meanwhile.
        assert free_runs.done.wait(WAIT), "unlimited jobs stopped flowing"
        scheduled = items(ScheduledSet(app))
        assert scheduled, "the refused exports were not rescheduled"
        assert all(item.get("retry_count") is None for item in scheduled)
        assert all(item["limit_reschedules"] >= 1 for item in scheduled)
        gate.set()
        assert limited_runs.done.wait(WAIT)
    assert sorted(limited_runs.calls) == [0, 1, 2]
    assert RetrySet(app).size() == 0
    usage = app.limits.get("export")
    assert usage.acquired == 3 and usage.used == 0


def test_an_inline_limit_releases_on_exception_and_reschedules_when_full(
        make_app: MakeApp) -> None:
    app = make_app(concurrency=2)
    stripe = app.limiter.concurrent("stripe", 1)
    attempts: list[str] = []
    done = Countdown(1)

    @app.job(retry=3)
    def charge(label: str) -> None:
        with stripe:
            attempts.append(label)
            if label == "boom":
                raise ValueError("card declined")
        done.record(label)

    charge.perform_async("boom")
    with working(app):
        wait_until(lambda: RetrySet(app).size() == 1, WAIT, "the failure was never filed")
        assert app.limits.get("stripe").used == 0  # released on the exception
        charge.perform_async("ok")
        assert done.done.wait(WAIT)
    assert attempts[:2] == ["boom", "ok"]


def test_an_inline_limit_over_its_limit_reschedules(make_app: MakeApp) -> None:
    app = make_app(concurrency=1)  # one at a time: the first pushed takes the admission
    quota = app.limiter.window("quota", 1, per=3600)
    runs = Countdown(1)

    @app.job
    def call_api(number: int) -> None:
        with quota:
            runs.record(number)

    call_api.perform_async(1)
    call_api.perform_async(2)
    with working(app):
        assert runs.done.wait(WAIT)
        wait_until(lambda: ScheduledSet(app).size() == 1, WAIT, "the second was not rescheduled")
    [item] = items(ScheduledSet(app))
    assert item["limit_reschedules"] == 1
    assert item.get("retry_count") is None
    assert runs.calls == [1]


def test_after_max_reschedules_an_over_limit_is_a_failure_that_retries(
        make_app: MakeApp) -> None:
    app = make_app(plugin_options={"limits": {"max_reschedules": 2, "backoff": 0.05,
                                              "max_backoff": 0.05}})
    quota = app.limiter.window("tight", 1, per=3600)

    @app.job(retry=5)
    def call_api() -> None:
        with quota:
            pass

    assert call_api.perform_async() is not None  # takes the window's one admission
    with working(app):
        wait_until(lambda: [(u.spec.name, u.acquired) for u in app.limits.all()]
                   == [("tight", 1)], WAIT, "the first call never took the admission")
        jid = call_api.perform_async()
        wait_until(lambda: RetrySet(app).size() == 1, WAIT, "the over-limit never failed")
    [item] = items(RetrySet(app))
    assert item["jid"] == jid
    assert item["retry_count"] == 1
    assert item["error_class"].endswith("OverLimit")
    assert "limit_reschedules" not in item  # the count starts again
    assert app.limits.get("tight").over == 3


def test_a_per_customer_key_limits_each_customer_apart(make_app: MakeApp) -> None:
    app = make_app(concurrency=2)
    runs = Countdown(4)

    @app.job(limits=[app.limiter.window("api", 1, per=3600,
                                        key=lambda customer, *_: f"api:{customer}")])
    def sync(customer: str, number: int) -> None:
        runs.record((customer, number))

    for customer in ("acme", "globex"):
        for number in (1, 2):
            sync.perform_async(customer, number)
    with working(app):
        wait_until(lambda: len(runs.calls) == 2 and ScheduledSet(app).size() == 2, WAIT)
    assert sorted(customer for customer, _ in runs.calls) == ["acme", "globex"]
    names = {usage.spec.name: usage for usage in app.limits.all()}
    assert set(names) == {"api:acme", "api:globex"}
    assert all(usage.used == 1 and usage.over >= 1 for usage in names.values())


def test_a_held_slot_is_renewed_by_the_heartbeat(make_app: MakeApp) -> None:
    app = make_app(heartbeat_interval=0.2)
    started, gate = threading.Event(), threading.Event()

    @app.job(limits=[app.limiter.concurrent("long", 1, lease=0.5)])
    def long_job() -> None:
        started.set()
        assert gate.wait(WAIT)

    long_job.perform_async()
    with working(app):
        assert started.wait(WAIT)
        first = app.limits.get("long").holders[0].lease_ends
        wait_until(lambda: app.limits.get("long").holders[0].lease_ends > first + 0.3, WAIT,
                   "the lease was never renewed")
        time.sleep(0.7)  # longer than the lease: only renewals keep the slot
        assert app.limits.get("long").used == 1
        gate.set()
        wait_until(lambda: app.limits.get("long").used == 0, WAIT)


def test_the_limits_middleware_is_outside_the_other_plugins(make_app: MakeApp) -> None:
    """An over-limit job is not a run for metrics, history or status: the limits
    middleware wraps theirs."""
    app = make_app(plugins=("history", "status"))

    @app.job(limits=[app.limiter.concurrent("x", 1)])
    def limited() -> None: ...

    chain = app.hooks.server_middleware(app)
    assert chain[0].__qualname__ == "limits_middleware.<locals>.limited"  # type: ignore[attr-defined]
    assert len(chain) >= 4  # metrics, history, status too


def test_declared_limiters_are_listed_once_a_worker_starts(make_app: MakeApp) -> None:
    app = make_app()

    @app.job(limits=[app.limiter.concurrent("exports", 3, lease=300),
                     app.limiter.window("per-customer", 5, per=60, key=lambda c: f"c:{c}")])
    def export(customer: str) -> None: ...

    assert app.limits.all() == []
    with working(app):
        pass
    [usage] = app.limits.all()  # the keyed one registers per key, on first use
    assert usage.spec.describe() == "concurrent 3 (lease 300 s)"
    assert (usage.used, usage.acquired) == (0, 0)


def test_no_middleware_when_no_job_declares_limits(make_app: MakeApp) -> None:
    app = make_app()

    @app.job
    def plain() -> None: ...

    names = [getattr(m, "__qualname__", "") for m in app.hooks.server_middleware(app)]
    assert names  # metrics is there
    assert "limits_middleware.<locals>.limited" not in names


def test_an_inline_over_limit_is_no_run_for_metrics_history_and_status(
        make_app: MakeApp) -> None:
    app = make_app(concurrency=1, plugins=["status", "history"])  # the first one first
    quota = app.limiter.window("inline-quota", 1, per=3600)
    runs = Countdown(1)

    @app.job(name="CallApi")
    def call_api(number: int) -> None:
        with quota:
            runs.record(number)

    call_api.perform_async(1)
    later = call_api.perform_async(2)
    with working(app):  # its stop writes what each plugin still holds
        assert runs.done.wait(WAIT)
        wait_until(lambda: ScheduledSet(app).size() == 1, WAIT, "the second was not rescheduled")

    [row] = [row for row in Metrics(app).summaries(since=3600) if row.job_class == "CallApi"]
    assert (row.processed, row.failed) == (1, 0)
    assert app.history.count(job_class="CallApi") == 1
    assert app.history.count(status="failed") == 0
    status = app.status(str(later))
    assert status is not None and status.state == "scheduled"
