"""The ``otel`` plugin: producer and consumer spans read from the SDK's in-memory exporter.

The jobs run on a real worker (the in-process worker: a real Manager, fetcher and Redis)
in this process, so the SDK's :class:`InMemorySpanExporter` sees both sides; the context
reaches the worker only through the payload (processor threads share no context with the
pushing thread). ``test_otel_process.py`` shows the same across processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import cast

import pytest
import redis
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from cogworker.app import App
from cogworker.core.errors import ConfigurationError, PluginError
from cogworker.plugins.otel import PAYLOAD_FIELD
from cogworker.redis.keys import KeySchema
from cogworker.testing import InProcessWorker
from plugins.otel_support import in_memory_exporter


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = in_memory_exporter()
    yield exporter
    exporter.clear()


def _app(redis_url: str, namespace: str, *plugins: str, **options: object) -> App:
    return App(redis_url=redis_url, namespace=namespace, plugins=plugins, concurrency=2,
               queues=("default", "mail"), plugin_options={"otel": options} if options else {})


@pytest.fixture
def app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[App]:
    application = _app(redis_url, namespace, "otel")
    yield application
    application.close()


def _named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return sorted((span for span in spans if span.name == name),
                  key=lambda span: span.start_time or 0)


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_a_trace_runs_from_the_request_through_the_push_to_each_run_retries_included(
    app: App, spans: InMemorySpanExporter,
) -> None:
    attempts: list[int] = []

    @app.job(name="Signup", queue="mail")
    def signup(user_id: int) -> None:
        return None

    @app.job(name="Flaky", retry=3, retry_in=lambda count, exc: 0)
    def flaky(user_id: int) -> None:
        attempts.append(user_id)
        if len(attempts) == 1:
            raise ValueError("the mail server said no")

    tracer = trace.get_tracer("the-web-app")
    with tracer.start_as_current_span("POST /signup", kind=SpanKind.SERVER) as request:
        signup_jid = signup.perform_async(7)
        flaky_jid = flaky.perform_async(7)
    assert InProcessWorker(app).run_until_idle(timeout=20) == 3

    finished = spans.get_finished_spans()
    trace_id = request.get_span_context().trace_id
    assert {span.context.trace_id for span in finished if span.context} == {trace_id}
    [send_mail] = _named(finished, "send mail")
    [send_default] = _named(finished, "send default")
    for send, jid, queue in ((send_mail, signup_jid, "mail"), (send_default, flaky_jid,
                                                                "default")):
        assert send.kind is SpanKind.PRODUCER
        assert _parent_id(send) == request.get_span_context().span_id
        assert dict(send.attributes or {}) == {
            "messaging.system": "cogworker", "messaging.operation.type": "send",
            "messaging.operation.name": "send", "messaging.destination.name": queue,
            "messaging.message.id": jid, "messaging.client.id": app.identity,
            "cogworker.job.class": "Signup" if queue == "mail" else "Flaky"}

    [run_mail] = _named(finished, "process mail")
    assert run_mail.kind is SpanKind.CONSUMER
    assert send_mail.context is not None and _parent_id(run_mail) == send_mail.context.span_id
    assert run_mail.status.status_code is StatusCode.UNSET
    attributes = dict(run_mail.attributes or {})
    assert attributes["messaging.operation.type"] == "process"
    assert attributes["messaging.message.id"] == signup_jid
    assert attributes["cogworker.job.retry_count"] == 0

    failed, retried = _named(finished, "process default")
    assert send_default.context is not None
    assert _parent_id(failed) == _parent_id(retried) == send_default.context.span_id
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description == "ValueError: the mail server said no"
    assert dict(failed.attributes or {})["error.type"] == "ValueError"
    [event] = failed.events
    assert event.name == "exception"
    assert dict(event.attributes or {})["exception.message"] == "the mail server said no"
    assert retried.status.status_code is StatusCode.UNSET
    assert dict(retried.attributes or {})["cogworker.job.retry_count"] == 1
    assert attempts == [7, 7]


def test_the_context_travels_in_one_payload_field_that_a_worker_without_the_plugin_ignores(
    app: App, spans: InMemorySpanExporter, redis_url: str, namespace: str,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    ran: list[int] = []
    plain = _app(redis_url, namespace)  # the same jobs, a worker without the plugin

    for application in (app, plain):
        @application.job(name="Note")
        def note(n: int) -> None:
            ran.append(n)

    jid = app.push({"class": "Note", "args": [1]})
    [raw] = redis_client.lrange(keys.queue("default"), 0, -1)
    carried = json.loads(raw)[PAYLOAD_FIELD]
    [send] = spans.get_finished_spans()
    assert send.context is not None
    assert carried == {"traceparent": f"00-{send.context.trace_id:032x}-"
                                      f"{send.context.span_id:016x}-"
                                      f"{int(send.context.trace_flags):02x}"}
    try:
        assert InProcessWorker(plain).run_until_idle(timeout=20) == 1
    finally:
        plain.close()
    assert ran == [1]
    assert [span.name for span in spans.get_finished_spans()] == ["send default"]
    assert jid is not None


def test_link_mode_starts_a_trace_per_run_linked_to_the_push(
    redis_url: str, namespace: str, redis_client: redis.Redis, spans: InMemorySpanExporter,
) -> None:
    app = _app(redis_url, namespace, "otel", consumer_context="link", record_args=True)
    try:
        @app.job(name="Report")
        def report(month: str) -> None:
            return None

        report.perform_async("2026-11")
        assert InProcessWorker(app).run_until_idle(timeout=20) == 1
    finally:
        app.close()
    [send] = _named(spans.get_finished_spans(), "send default")
    [run] = _named(spans.get_finished_spans(), "process default")
    assert send.context is not None and run.context is not None
    assert run.parent is None and run.context.trace_id != send.context.trace_id
    [link] = run.links
    assert (link.context.trace_id, link.context.span_id) == (send.context.trace_id,
                                                             send.context.span_id)
    assert dict(run.attributes or {})["cogworker.job.args"] == '["2026-11"]'


def test_a_bad_option_stops_start_up_naming_it(redis_url: str, namespace: str) -> None:
    app = _app(redis_url, namespace, "otel", consumer_context="parent")
    with pytest.raises(ConfigurationError, match=r"plugin_options\.otel\.consumer_context"):
        app.hooks  # noqa: B018 -- configuring the plugins is the point
    app = _app(redis_url, namespace, "otel", record_arguments=True)
    with pytest.raises(ConfigurationError, match="its options are: consumer_context, "
                                                 "record_args"):
        app.hooks  # noqa: B018


def test_without_opentelemetry_activating_the_plugin_fails_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, namespace: str,
) -> None:
    monkeypatch.setitem(sys.modules, "cogworker.plugins.otel_tracing", None)
    app = _app(redis_url, namespace, "otel")
    with pytest.raises(PluginError, match=r"pip install 'cogworker\[otel\]'"):
        app.hooks  # noqa: B018


def test_cogworker_run_without_opentelemetry_exits_2_naming_the_extra(redis_url: str) -> None:
    hide = ("import sys; sys.modules['opentelemetry'] = None; "
            "from cogworker.cli import main; main()")
    result = subprocess.run(
        [sys.executable, "-c", hide, "run", "--redis-url", redis_url, "--plugin", "otel",
         "--allow-no-jobs"], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    assert "plugin 'otel' needs OpenTelemetry's API" in result.stderr
    assert "pip install 'cogworker[otel]'" in result.stderr


def test_each_job_of_a_bulk_push_and_a_scheduled_push_gets_its_own_send_span(
    app: App, spans: InMemorySpanExporter, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    @app.job(name="Bulk")
    def bulk(n: int) -> None:
        return None

    jids = app.push_bulk(bulk, [[n] for n in range(3)])
    later = bulk.perform_in(3600, 9)
    sends = _named(spans.get_finished_spans(), "send default")
    assert [dict(span.attributes or {})["messaging.message.id"] for span in sends] == [
        *jids, later]
    assert "cogworker.job.scheduled_at" in dict(sends[-1].attributes or {})
    carried = {json.loads(raw)["jid"]: json.loads(raw)[PAYLOAD_FIELD]["traceparent"]
               for raw in redis_client.lrange(keys.queue("default"), 0, -1)}
    [scheduled] = cast(list[bytes], redis_client.zrange(keys.schedule, 0, -1))
    carried[later] = json.loads(scheduled)[PAYLOAD_FIELD]["traceparent"]
    for span in sends:
        assert span.context is not None
        jid = dict(span.attributes or {})["messaging.message.id"]
        assert carried[str(jid)].split("-")[2] == f"{span.context.span_id:016x}"


def test_with_the_api_alone_a_push_carries_no_field_and_the_job_runs() -> None:
    script = """
import cogworker
from cogworker.testing import InProcessWorker

app = cogworker.App(redis_url="memory://", plugins=["memory", "otel"])
ran = []

@app.job(name="Plain")
def plain(n):
    ran.append(n)

app.push({"class": "Plain", "args": [5]})
[raw] = app.broker.queues.page("default", 0, 1)
assert '"otel"' not in raw, raw
assert InProcessWorker(app).run_until_idle(timeout=20) == 1 and ran == [5]
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60, check=False)
    assert (result.returncode, result.stdout.strip()) == (0, "ok"), result.stderr
