"""The spans of the ``otel`` plugin (imports OpenTelemetry's API; :mod:`.otel` imports this
only once the plugin is configured, so ``cogworker plugins`` works without the extra).

One :class:`Tracing` per app: its :meth:`~Tracing.producer` is the client middleware, its
:meth:`~Tracing.consumer` the server middleware. See :mod:`cogworker.plugins.otel` for the
spans, their attributes and the payload field.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from cogworker.__about__ import __version__
from cogworker.plugins.otel import PAYLOAD_FIELD, OtelOptions

if TYPE_CHECKING:
    from cogworker.core.middleware import JobContext, PushContext
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

logger = logging.getLogger("cogworker.plugin.otel")

INSTRUMENTATION_NAME: Final = "cogworker"
MESSAGING_SYSTEM: Final = "cogworker"
ARGS_LIMIT: Final = 1000  # characters of the arguments' JSON kept on a span


def error_type(exc: BaseException) -> str:
    """``error.type`` as the conventions ask: the exception's fully qualified class name."""
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else (
        f"{kind.__module__}.{kind.__qualname__}")


class Tracing:
    """The producer and consumer spans of one app."""

    def __init__(self, app: PluginHost, options: OtelOptions) -> None:
        self._app = app
        self.options = options
        # A proxy until the application installs an SDK provider: later set-up still counts.
        self._tracer = trace.get_tracer(INSTRUMENTATION_NAME, __version__)
        self._warned: set[str] = set()

    # client side ------------------------------------------------------------------------
    def producer(self, ctx: PushContext, call_next: Callable[[], str | None]) -> str | None:
        """``send <queue>`` around one push; the context goes into the payload."""
        attributes = self._attributes(ctx.job, ctx.queue, "send")
        if ctx.scheduled_at is not None:
            attributes["cogworker.job.scheduled_at"] = float(ctx.scheduled_at)
        span = self._start(f"send {ctx.queue}", SpanKind.PRODUCER, attributes, None, ())
        if span is None or not span.get_span_context().is_valid:  # no SDK: nothing to carry
            return call_next()
        with trace.use_span(span, end_on_exit=True, record_exception=False,
                            set_status_on_exception=False):
            self._inject(ctx.job)
            try:
                jid = call_next()
            except BaseException as exc:
                self._record_failure(span, exc)
                raise
            if jid is None:  # an inner middleware stopped the push: nothing was stored
                span.set_attribute("cogworker.job.stored", False)
            return jid

    def _inject(self, job: Payload) -> None:
        carrier: dict[str, str] = {}
        try:
            propagate.inject(carrier)
        except Exception as exc:
            self._warn("inject", exc)
            return
        if carrier:
            job[PAYLOAD_FIELD] = carrier

    # worker side ------------------------------------------------------------------------
    def consumer(self, ctx: JobContext, call_next: Callable[[], object]) -> object:
        """``process <queue>`` around one run, under the context the push carried."""
        attributes = self._attributes(ctx.job, ctx.queue, "process")
        retry_count = ctx.job.get("retry_count", 0)
        if isinstance(retry_count, int) and not isinstance(retry_count, bool):
            attributes["cogworker.job.retry_count"] = retry_count
        parent, links = self._parent(ctx.job)
        span = self._start(f"process {ctx.queue}", SpanKind.CONSUMER, attributes, parent,
                           links)
        # Without an SDK the API's span still carries a pushed context on (to the pushes the
        # job makes); with neither there is nothing to do.
        if span is None or not span.get_span_context().is_valid:
            return call_next()
        with trace.use_span(span, end_on_exit=True, record_exception=False,
                            set_status_on_exception=False):
            try:
                return call_next()
            except BaseException as exc:
                self._record_failure(span, exc)
                raise

    def _parent(self, job: Payload) -> tuple[otel_context.Context | None, tuple[Link, ...]]:
        """The context a run's span starts under, and its links. Without a carried context
        (pushed by a process without the plugin): the current one, and no link."""
        carrier = job.get(PAYLOAD_FIELD)
        if not isinstance(carrier, Mapping):
            return None, ()
        try:
            carried = propagate.extract({str(key): str(value) for key, value in carrier.items()
                                         if isinstance(value, str)})
        except Exception as exc:
            self._warn("extract", exc)
            return None, ()
        if self.options.consumer_context == "child":
            return carried, ()
        producer = trace.get_current_span(carried).get_span_context()
        links = (Link(producer),) if producer.is_valid else ()
        return otel_context.Context(), links  # an empty context: a trace of its own

    # shared -----------------------------------------------------------------------------
    def _attributes(self, job: Payload, queue: str, operation: str) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {
            "messaging.system": MESSAGING_SYSTEM,
            "messaging.operation.type": operation,
            "messaging.operation.name": operation,
            "messaging.destination.name": queue,
            "messaging.message.id": str(job.get("jid", "")),
            "messaging.client.id": self._app.identity,
            "cogworker.job.class": str(job.get("class", "?")),
        }
        if self.options.record_args:
            attributes["cogworker.job.args"] = _args_text(job.get("args"))
        return attributes

    def _start(self, name: str, kind: SpanKind, attributes: dict[str, AttributeValue],
               parent: otel_context.Context | None, links: tuple[Link, ...]) -> Span | None:
        try:
            return self._tracer.start_span(name, context=parent, kind=kind,
                                           attributes=attributes, links=links)
        except Exception as exc:
            self._warn("start a span", exc)
            return None

    def _record_failure(self, span: Span, exc: BaseException) -> None:
        try:
            span.record_exception(exc)
            span.set_attribute("error.type", error_type(exc))
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        except Exception as record_exc:
            self._warn("record an error", record_exc)

    def _warn(self, action: str, exc: Exception) -> None:
        """Log a tracing failure once per kind of step: tracing never fails a job."""
        if action in self._warned:
            return
        self._warned.add(action)
        logger.warning("OpenTelemetry could not %s (%s: %s); jobs go on untraced where it "
                       "fails (logged once)", action, type(exc).__name__, exc)


def _args_text(args: Any) -> str:
    text = json.dumps(args, ensure_ascii=False, default=str)
    return text if len(text) <= ARGS_LIMIT else f"{text[:ARGS_LIMIT]}..."
