"""The Prometheus exporter after a known workload run by a real worker: every family with
its value, bounded cardinality, the ASGI and HTTP servings, and the missing-extra error."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from cogworker.app import App
from cogworker.core.broker import METRICS, MetricsBatch, SeriesKey, Timings
from cogworker.core.broker.metrics import BUCKET_COUNT
from cogworker.core.errors import DependencyError
from cogworker.prometheus import require_prometheus_client
from cogworker.prometheus.serving import asgi_app, fleet_registry, make_exporter_server
from plugins.metrics.workload import (
    BROKEN_RUNS,
    FAST_RUNS,
    SLOW_RUNS,
    metrics_app,
    run_workload,
)


@pytest.fixture
def app(redis_url: str, namespace: str, redis_client: object) -> Iterator[App]:
    application = metrics_app(redis_url, namespace)
    try:
        yield application
    finally:
        application.close()


def scrape_text(app: App, **limits: int) -> str:
    return generate_latest(fleet_registry(app.broker, **limits)).decode()


def samples(text: str) -> dict[str, list[Sample]]:
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def value(found: dict[str, list[Sample]], family: str, name: str | None = None,
          **labels: str) -> float:
    matches = [s.value for s in found[family] if s.name == (name or family)
               and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(matches) == 1, (family, name, labels, found[family])
    return matches[0]


def test_a_scrape_after_a_known_workload_has_every_family(app: App) -> None:
    run_workload(app, with_cron=True, orphans=2)  # two Fast jobs of a dead process
    app.broker.queues.store([("mail", '{"class":"Later","jid":"j1","enqueued_at":1}')], [])
    app.broker.sets.file("retry", 2e9, '{"class":"R","jid":"r1"}')
    app.broker.queues.store([], [(2e9, '{"class":"S","jid":"s1"}')])

    found = samples(scrape_text(app))

    processed = FAST_RUNS + 2 + SLOW_RUNS + 1  # the recovered orphans, the cron run
    assert value(found, "cogworker_processed", "cogworker_processed_total") == processed
    assert value(found, "cogworker_failed", "cogworker_failed_total") == BROKEN_RUNS
    assert value(found, "cogworker_retry_size") == 1
    assert value(found, "cogworker_scheduled_size") == 1
    assert value(found, "cogworker_dead_size") == BROKEN_RUNS
    assert value(found, "cogworker_queue_size", queue="mail") == 1
    assert value(found, "cogworker_queue_size", queue="default") == 0
    assert value(found, "cogworker_queue_latency_seconds", queue="mail") > 1e9
    assert value(found, "cogworker_queue_latency_seconds", queue="default") == 0
    assert value(found, "cogworker_busy_workers") == 0
    assert value(found, "cogworker_processes") == 0  # the worker stopped
    assert value(found, "cogworker_orphans_recovered",
                 "cogworker_orphans_recovered_total") == 2
    assert 0 <= value(found, "cogworker_cron_tick_lag_seconds") <= 120
    duration = "cogworker_job_duration_seconds"
    for job_class, queue, runs in (("Fast", "default", FAST_RUNS + 2),
                                   ("Slow", "low", SLOW_RUNS),
                                   ("Broken", "default", BROKEN_RUNS), ("Tick", "default", 1)):
        labels = {"class": job_class, "queue": queue}
        assert value(found, duration, f"{duration}_count", **labels) == runs
        assert value(found, duration, f"{duration}_bucket", le="+Inf", **labels) == runs
        assert value(found, duration, f"{duration}_sum", **labels) > 0
    slow_sum = value(found, duration, f"{duration}_sum", **{"class": "Slow", "queue": "low"})
    assert slow_sum >= SLOW_RUNS * 0.03
    assert value(found, duration, f"{duration}_bucket", le="0.02",
                 **{"class": "Slow", "queue": "low"}) == 0
    assert not [s for s in found[duration] if s.labels.get("class") == "other"]


def test_the_process_gauges_count_a_running_worker(app: App) -> None:
    from helpers.threaded_worker import working

    with working(app):
        found = samples(scrape_text(app))
    assert value(found, "cogworker_processes") == 1


def test_ten_thousand_classes_give_a_bounded_scrape(app: App) -> None:
    store = app.broker.extension(METRICS)
    assert store is not None
    one_run = Timings(1, 0, 2.0, (0, 1) + (0,) * (BUCKET_COUNT - 2))
    busy = Timings(50, 0, 100.0, (0, 50) + (0,) * (BUCKET_COUNT - 2))
    series = {SeriesKey(f"Class{i:05d}", "default"): one_run for i in range(10_000)}
    series[SeriesKey("Busy", "default")] = busy
    store.record(MetricsBatch(series), 1_700_000_000.0, 600, 600)
    queues = [(f"q{i:03d}", '{"class":"X","jid":"x"}') for i in range(30)]
    app.broker.queues.store(queues, [])

    found = samples(scrape_text(app, max_series=10, max_queues=5))

    duration = "cogworker_job_duration_seconds"
    shown = {s.labels["class"] for s in found[duration]}
    assert len(shown) == 11 and "Busy" in shown and "other" in shown
    other = {"class": "other", "queue": "other"}
    assert value(found, duration, f"{duration}_count", **other) == 10_000 - 9
    assert len(found["cogworker_queue_size"]) == 6
    assert value(found, "cogworker_queue_size", queue="other") == 25


def test_the_http_server_and_the_asgi_app_serve_the_scrape(app: App) -> None:
    server = make_exporter_server(app.broker, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read().decode()
            content_type = response.headers["Content-Type"]
    finally:
        server.shutdown()
        server.server_close()
    assert content_type.startswith("text/plain; version=0.0.4")
    assert "cogworker_processed_total 0.0" in body

    assert "cogworker_dead_size 0.0" in asgi_get(asgi_app(app.broker))


def asgi_get(application: Any) -> str:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "query_string": b"",
             "headers": []}
    asyncio.run(application(scope, receive, send))
    assert sent[0]["status"] == 200
    return b"".join(m.get("body", b"") for m in sent[1:]).decode()


def test_without_prometheus_client_the_error_names_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)

    with pytest.raises(DependencyError, match=r"cogworker\[prometheus\]"):
        require_prometheus_client()


def test_cogworker_metrics_serve_answers_scrapes(app: App, redis_url: str,
                                                 namespace: str) -> None:
    app.broker.queues.store([("mail", '{"class":"Later","jid":"j1"}')], [])
    command = [sys.executable, "-m", "cogworker", "metrics", "serve", "--port", "0",
               "--redis-url", redis_url, "--namespace", namespace]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
        assert match, line
        with urllib.request.urlopen(match.group(0), timeout=30) as response:
            body = response.read().decode()
    finally:
        server.terminate()
        server.wait(30)
    assert value(samples(body), "cogworker_queue_size", queue="mail") == 1
