"""The ``history`` plugin through a real worker runtime (Launcher threads, real Redis)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
import redis

import cogworker
from cogworker.api import RetrySet
from cogworker.core.broker import HISTORY, HistoryRecord, HistoryRetention, HistoryStore
from cogworker.core.errors import BrokerUnavailableError
from cogworker.plugins.history.recorder import ELIDED
from cogworker.worker.launcher import Launcher
from helpers.workers import wait_until

FAST: dict[str, Any] = {"heartbeat_interval": 0.2, "poll_interval": 0.2, "concurrency": 2,
                        "plugins": ("history",)}

MakeApp = Callable[..., cogworker.App]


@pytest.fixture
def make_app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[MakeApp]:
    apps: list[cogworker.App] = []

    def make(**settings: Any) -> cogworker.App:
        app = cogworker.App(redis_url=redis_url, namespace=namespace, **{**FAST, **settings})
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


@contextmanager
def running(app: cogworker.App) -> Iterator[Launcher]:
    """A worker for ``app`` on a thread of this process, stopped (and joined) afterwards."""
    launcher = Launcher(app)
    thread = threading.Thread(target=launcher.run, name="test-launcher", daemon=True)
    thread.start()
    try:
        assert launcher.started.wait(20), "the worker did not start"
        yield launcher
    finally:
        launcher.request_stop()
        thread.join(30)
        assert not thread.is_alive(), "the worker did not stop"


def runs_of(app: cogworker.App, jid: str) -> list[HistoryRecord]:
    return app.history.timeline(jid)


def test_each_run_leaves_one_record_with_its_duration(make_app: MakeApp) -> None:
    app = make_app()

    @app.job
    def nap(seconds: float, label: str) -> None:
        time.sleep(seconds)

    jid = nap.perform_async(0.05, "x")
    assert jid is not None
    with running(app):
        wait_until(lambda: len(runs_of(app, jid)) == 1, 20, "no history record")

    [record] = runs_of(app, jid)
    assert record.status == "success"
    assert record.job_class == nap.definition.name
    assert record.queue == "default"
    assert record.args == '[0.05,"x"]'
    assert record.duration >= 0.05
    assert record.finished_at >= record.started_at + 0.05
    assert record.error_class is None
    assert record.backtrace == ()


def test_failing_twice_then_succeeding_leaves_three_records_under_the_jid(
    make_app: MakeApp,
) -> None:
    app = make_app()
    attempts: list[int] = []

    @app.job(retry=3, retry_in=lambda count, exc, job: 0.1)
    def flaky() -> None:
        attempts.append(1)
        if len(attempts) <= 2:
            raise ValueError(f"attempt {len(attempts)} failed")

    jid = flaky.perform_async()
    assert jid is not None
    with running(app):
        wait_until(lambda: len(runs_of(app, jid)) == 3, 30, lambda: f"{runs_of(app, jid)}")

    runs = runs_of(app, jid)
    assert [run.status for run in runs] == ["failed", "failed", "success"]
    assert [run.error_message for run in runs] == ["attempt 1 failed", "attempt 2 failed", None]
    assert all(run.error_class == "ValueError" for run in runs[:2])
    assert runs[0].finished_at <= runs[1].started_at
    failed = app.history.page(status="failed", jid=jid)
    assert [run.run_id for run in failed.records] == [runs[1].run_id, runs[0].run_id]
    assert app.history.count(job_class=flaky.definition.name) == 3


def _deep(depth: int) -> None:
    if depth == 0:
        raise RuntimeError("deep down " + "x" * 100)
    _deep(depth - 1)


def test_a_failure_keeps_its_backtrace_capped_in_lines(make_app: MakeApp) -> None:
    app = make_app(plugin_options={"history": {"backtrace_max_lines": 6}})

    @app.job(retry=False)
    def broken() -> None:
        _deep(30)

    jid = broken.perform_async()
    assert jid is not None
    with running(app):
        wait_until(lambda: len(runs_of(app, jid)) == 1, 20, "no history record")

    [record] = runs_of(app, jid)
    assert record.status == "failed"
    assert record.error_class == "RuntimeError"
    assert record.backtrace[0] == "Traceback (most recent call last):"
    assert len(record.backtrace) == 7  # the first 6 lines, then how many were left out
    assert record.backtrace[-1].startswith("... ")
    assert record.backtrace[-1] == ELIDED.format(count=int(record.backtrace[-1].split()[1]))


def test_a_failure_keeps_its_backtrace_capped_in_bytes(make_app: MakeApp) -> None:
    app = make_app(plugin_options={"history": {"backtrace_max_bytes": 400}})

    @app.job(retry=False)
    def broken() -> None:
        _deep(30)

    jid = broken.perform_async()
    assert jid is not None
    with running(app):
        wait_until(lambda: len(runs_of(app, jid)) == 1, 20, "no history record")

    [record] = runs_of(app, jid)
    kept = record.backtrace[:-1]
    assert kept and sum(len(line.encode()) + 1 for line in kept) <= 400
    assert record.backtrace[-1].endswith("more line(s) not kept")


def test_long_arguments_are_cut_and_marked(make_app: MakeApp) -> None:
    app = make_app(plugin_options={"history": {"args_max_bytes": 20}})

    @app.job
    def echo(text: str) -> None:
        pass

    jid = echo.perform_async("é" * 50)
    assert jid is not None
    with running(app):
        wait_until(lambda: len(runs_of(app, jid)) == 1, 20, "no history record")

    [record] = runs_of(app, jid)
    assert record.args_truncated
    assert len(record.args.encode()) <= 20
    assert record.args.startswith('["éé')


class CountingStore:
    """The broker's history store, counting the appends the plugin makes."""

    def __init__(self, inner: HistoryStore) -> None:
        self.inner = inner
        self.appends = 0

    def append(self, records: Sequence[HistoryRecord], retention: HistoryRetention) -> None:
        self.appends += 1
        self.inner.append(records, retention)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_records_are_written_in_batches_not_one_call_per_job(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = make_app(concurrency=4)
    store = app.broker.extension(HISTORY)
    assert store is not None
    counting = CountingStore(store)
    original = app.broker.extension
    monkeypatch.setattr(app.broker, "extension",
                        lambda key: counting if key is HISTORY else original(key))

    @app.job
    def quick(n: int) -> None:
        pass

    app.push_bulk(quick, [[n] for n in range(200)])
    with running(app):
        wait_until(lambda: app.history.count() == 200, 30,
                   lambda: f"{app.history.count()} of 200 recorded")

    assert 1 <= counting.appends < 20  # once a second (and at stop), never once per job


def test_records_still_buffered_at_stop_are_written(make_app: MakeApp) -> None:
    app = make_app()
    done = threading.Event()

    @app.job
    def last() -> None:
        done.set()

    jid = last.perform_async()
    assert jid is not None
    with running(app):
        assert done.wait(20)
    # no wait for a flush: stopping the worker wrote what it still held
    assert len(runs_of(app, jid)) == 1


def test_without_the_plugin_nothing_is_recorded(make_app: MakeApp) -> None:
    app = make_app(plugins=())
    done = threading.Event()

    @app.job
    def plain() -> None:
        done.set()

    jid = plain.perform_async()
    assert jid is not None
    with running(app):
        assert done.wait(20)
    assert runs_of(app, jid) == []


def test_a_job_of_an_unknown_class_is_recorded_as_failed(make_app: MakeApp) -> None:
    app = make_app()
    jid = app.push({"class": "no.such.Job", "args": [1], "retry": False})
    assert jid is not None

    with running(app):
        wait_until(lambda: len(runs_of(app, jid)) == 1, 20, "no history record")

    [record] = runs_of(app, jid)
    assert record.status == "failed"
    assert record.job_class == "no.such.Job"
    assert record.error_class is not None and "UnknownJobError" in record.error_class


class AwayStore(CountingStore):
    """Refuses its first ``failures`` appends as an unreachable Redis would."""

    def __init__(self, inner: HistoryStore, failures: int) -> None:
        super().__init__(inner)
        self.failures = failures

    def append(self, records: Sequence[HistoryRecord], retention: HistoryRetention) -> None:
        self.appends += 1
        if self.failures > 0:
            self.failures -= 1
            raise BrokerUnavailableError("Redis is away (a test)")
        self.inner.append(records, retention)


def test_a_broker_outage_delays_the_records_and_never_the_jobs(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = make_app()
    store = app.broker.extension(HISTORY)
    assert store is not None
    away = AwayStore(store, failures=2)
    original = app.broker.extension
    monkeypatch.setattr(app.broker, "extension",
                        lambda key: away if key is HISTORY else original(key))
    done: list[int] = []

    @app.job
    def count(n: int) -> None:
        done.append(n)

    app.push_bulk(count, [[n] for n in range(20)])
    with running(app):
        wait_until(lambda: len(done) == 20, 20, "the jobs did not all run")
        wait_until(lambda: app.history.count() == 20, 20,
                   lambda: f"{app.history.count()} of 20 recorded after the outage")

    assert away.appends >= 3  # two refused, then the records that waited were written
    assert RetrySet(app).size() == 0
