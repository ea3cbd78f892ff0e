"""The ``otel`` plugin across processes: a push in this process (under a web request's span)
and its runs in a real ``cogworker run --plugin otel`` process, whose SDK writes each
finished span to a file (its exporter wraps the SDK's in-memory one)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from cogworker.app import App
from helpers.workers import WorkerProcess, wait_until, write_app
from plugins.otel_support import in_memory_exporter

pytestmark = pytest.mark.slow

WORKER_APP = """
import json
import os

import cogworker
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class FileExporter(InMemorySpanExporter):
    def export(self, spans):
        with open(os.environ["SPANS_FILE"], "a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps({
                    "name": span.name, "kind": span.kind.name,
                    "trace_id": span.context.trace_id, "span_id": span.context.span_id,
                    "parent_id": span.parent.span_id if span.parent else None,
                    "status": span.status.status_code.name,
                    "attributes": dict(span.attributes),
                    "events": [event.name for event in span.events]}) + "\\n")
        return super().export(spans)


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
trace.set_tracer_provider(provider)

app = cogworker.App(heartbeat_interval=0.5, poll_interval=0.2)


@app.job(name="Charge", retry=2, retry_in=lambda count, exc: 0)
def charge(order_id, attempts_file):
    with open(attempts_file, "a", encoding="utf-8") as out:
        out.write("x")
    with open(attempts_file, encoding="utf-8") as seen:
        if len(seen.read()) == 1:
            raise ConnectionError("the payment service timed out")
"""


@pytest.fixture
def pusher(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[App]:
    """The "web process": an app with the plugin, its spans in the SDK's memory exporter."""
    app = App(redis_url=redis_url, namespace=namespace, plugins=("otel",))
    yield app
    app.close()


def _spans(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    complete = path.read_text(encoding="utf-8").split("\n")[:-1]  # not a line being written
    return [json.loads(line) for line in complete]


def test_the_worker_process_continues_the_trace_of_the_web_request(
    pusher: App, tmp_path: Path, redis_url: str, namespace: str,
) -> None:
    pushed = in_memory_exporter()
    spans_file = tmp_path / "spans.jsonl"
    write_app(tmp_path, WORKER_APP)
    worker = WorkerProcess(tmp_path, "jobapp:app",
                           ["--redis-url", redis_url, "--namespace", namespace,
                            "--plugin", "otel"], env={"SPANS_FILE": str(spans_file)}).start()
    try:
        with trace.get_tracer("shop").start_as_current_span("POST /checkout",
                                                            kind=SpanKind.SERVER) as request:
            jid = pusher.push({"class": "Charge", "args": [42, str(tmp_path / "attempts")]})
        wait_until(lambda: len(_spans(spans_file)) == 2, 60, worker.output)
        assert worker.stop() == 0
    finally:
        worker.close()

    failed, retried = _spans(spans_file)
    request_context = request.get_span_context()
    [send] = [span for span in pushed.get_finished_spans() if span.name == "send default"]
    assert send.kind is SpanKind.PRODUCER and send.context is not None
    assert send.parent is not None and send.parent.span_id == request_context.span_id
    for run in (failed, retried):
        assert run["name"] == "process default" and run["kind"] == "CONSUMER"
        assert run["trace_id"] == request_context.trace_id
        assert run["attributes"]["messaging.message.id"] == jid
        assert run["attributes"]["messaging.system"] == "cogworker"
    # Both runs are children of the push's span, itself the child of the request's.
    assert failed["parent_id"] == retried["parent_id"] == send.context.span_id
    assert failed["status"] == "ERROR" and failed["events"] == ["exception"]
    assert failed["attributes"]["error.type"] == "ConnectionError"
    assert failed["attributes"]["cogworker.job.retry_count"] == 0
    assert retried["status"] == "UNSET" and retried["events"] == []
    assert retried["attributes"]["cogworker.job.retry_count"] == 1
