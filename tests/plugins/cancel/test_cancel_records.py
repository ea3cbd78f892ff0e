"""Expired and cancelled jobs in the history and metrics plugins (real worker threads, real
Redis): an ``expired`` / ``cancelled`` history record, a count per class, and a stopped run
recorded ``cancelled`` with its times, never counted as failed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import cogworker
from cogworker.api.cancel import CancelOutcome
from cogworker.api.metrics import Metrics
from cogworker.app import App
from cogworker.core.broker import METRICS, SeriesKey, Timings
from cogworker.prometheus.collector import FleetCollector
from helpers.threaded_worker import WAIT, Countdown, working
from plugins.cancel.conftest import eventually


@pytest.fixture
def app(redis_url: str, namespace: str) -> Iterator[App]:
    application = App(redis_url=redis_url, namespace=namespace, concurrency=2, timeout=1.0,
                      poll_interval=0.2, plugins=("history", "metrics"))
    try:
        yield application
    finally:
        application.close()


def totals(app: App, job_class: str) -> Timings:
    store = app.broker.extension(METRICS)
    assert store is not None
    return store.totals([SeriesKey(job_class, "default")]).series[SeriesKey(job_class,
                                                                            "default")]


def statuses(app: App, jid: str) -> list[str]:
    return [record.status for record in app.history.timeline(jid)]


def test_expired_and_cancelled_jobs_leave_records_and_counts(app: App) -> None:
    started, ran = threading.Event(), Countdown(1)

    @app.job(name="note")
    def note(label: str) -> None:
        ran.record(label)

    @app.job(name="loops")
    def loops() -> None:
        started.set()
        job = cogworker.current_job()
        while not job.cancelled():
            time.sleep(0.01)

    stale = note.set(expires_in=0.05).perform_async("stale")
    removed = note.perform_async("removed")
    stopped = loops.perform_async()
    assert stale and removed and stopped
    assert app.cancel(removed).outcome is CancelOutcome.CANCELLED  # here, before any worker
    time.sleep(0.1)  # stale's expires_at passes
    note.perform_async("fresh")
    with working(app):
        assert ran.done.wait(WAIT) and started.wait(WAIT)
        assert app.cancel(stopped).outcome is CancelOutcome.SIGNALLED
        eventually(lambda: statuses(app, stopped) == ["cancelled"],
                   lambda: app.history.timeline(stopped))

    assert ran.calls == ["fresh"]
    assert statuses(app, stale) == ["expired"]
    assert statuses(app, removed) == ["cancelled"]
    assert "not started by its expires_at" in str(app.history.timeline(stale)[0].error_message)
    run = app.history.timeline(stopped)[0]
    assert run.duration_us > 0 and run.error_class == "cogworker.core.errors.JobCancelled"
    assert app.history.count(status="cancelled") == 2
    note_totals, loops_totals = totals(app, "note"), totals(app, "loops")
    assert (note_totals.processed, note_totals.failed) == (1, 0)
    assert (note_totals.expired, note_totals.cancelled) == (1, 1)
    assert (loops_totals.processed, loops_totals.failed, loops_totals.cancelled) == (0, 0, 1)
    exported = {(sample.name, sample.labels.get("class")): sample.value
                for family in FleetCollector(app.broker).collect() for sample in family.samples}
    assert exported[("cogworker_jobs_expired_total", "note")] == 1
    assert exported[("cogworker_jobs_cancelled_total", "note")] == 1
    assert exported[("cogworker_jobs_cancelled_total", "loops")] == 1
    summary = {row.job_class: row for row in Metrics(app).summaries()}
    assert (summary["note"].expired, summary["note"].cancelled) == (1, 1)
    assert summary["note"].to_dict()["expired"] == 1
