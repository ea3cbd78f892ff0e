"""The ``otel`` built-in plugin: OpenTelemetry tracing of every push and every run.

Activate it (``--plugin otel``, or ``plugins = ["otel"]``) in the processes that push *and*
in the workers; it needs the ``cogworker[otel]`` extra (``opentelemetry-api``) and, to
export anything, an OpenTelemetry SDK configured by the application (cogworker never
configures one: without it, the API's no-op tracer makes the spans free).

* around each push, a ``PRODUCER`` span ``send <queue>``; the trace context it starts is
  written into the payload's :data:`PAYLOAD_FIELD` (``otel``): the carrier dict of the
  configured propagator, W3C ``traceparent`` (and ``tracestate``, ``baggage`` when set) by
  default. A worker without the plugin carries the field along untouched.
* around each run, a ``CONSUMER`` span ``process <queue>``, by default a **child** of the
  producer span (one trace from the web request that pushed the job to each run of it; the
  messaging conventions allow the creation context as the parent of a single-message
  process span). With ``plugin_options.otel.consumer_context = "link"`` each run starts a
  trace of its own, linked to the producer span instead (for jobs that run days later).
  A retry keeps the payload's field, so it is a new consumer span in the same trace;
  ``cogworker.job.retry_count`` says which attempt it is. A failing run records the
  exception on its span, sets ``error.type`` and the status ERROR, and re-raises it.

Attributes follow the OpenTelemetry messaging semantic conventions (``messaging.system`` is
``cogworker``, ``messaging.destination.name`` the queue, ``messaging.message.id`` the jid,
``messaging.operation.type`` ``send`` or ``process``, ``messaging.operation.name`` the same,
``messaging.client.id`` the process identity); cogworker's own are under ``cogworker.job.*``.
Tracing is best-effort like all bookkeeping: a broken tracer or propagator is logged and
never fails a push or a job.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from cogworker.core.errors import ConfigurationError, PluginError
from cogworker.core.markers import hookimpl

if TYPE_CHECKING:
    from cogworker.core.middleware import ClientMiddleware, ServerMiddleware
    from cogworker.core.plugin_host import PluginHost

logger = logging.getLogger(__name__)

PLUGIN_NAME: Final = "otel"
PAYLOAD_FIELD: Final = "otel"
"""The payload field that carries the trace context from the push to each run."""
EXTRA: Final = "cogworker[otel]"

ConsumerContext = Literal["child", "link"]
_CONSUMER_CONTEXTS: Final = ("child", "link")


@dataclass(frozen=True, slots=True)
class OtelOptions:
    """``plugin_options.otel``: ``consumer_context`` ("child": the run's span is a child of
    the push's; "link": a new trace linked to it) and ``record_args`` (put the job's
    arguments on its spans as ``cogworker.job.args``; off: arguments may hold personal
    data)."""

    consumer_context: ConsumerContext = "child"
    record_args: bool = False


def read_options(app: PluginHost) -> OtelOptions:
    """The plugin's options, validated; a bad one is a :class:`ConfigurationError` naming
    it in full."""
    given = dict(app.options(PLUGIN_NAME))
    source = app.settings.sources.get("plugin_options")
    declared = ("consumer_context", "record_args")
    for name, value in given.items():
        if name not in declared:
            raise ConfigurationError(f"plugin_options.{PLUGIN_NAME}.{name}", value,
                                     f"an option of plugin 'otel'; its options are: "
                                     f"{', '.join(declared)}", source)
    context = given.get("consumer_context", "child")
    if context not in _CONSUMER_CONTEXTS:
        raise ConfigurationError(f"plugin_options.{PLUGIN_NAME}.consumer_context", context,
                                 "'child' (the run's span is a child of the push's) or "
                                 "'link' (a new trace, linked to it)", source)
    record_args = given.get("record_args", False)
    if not isinstance(record_args, bool):
        raise ConfigurationError(f"plugin_options.{PLUGIN_NAME}.record_args", record_args,
                                 "true or false", source)
    return OtelOptions(context, record_args)


def _tracing(app: PluginHost) -> Any:
    """The tracing half (imports OpenTelemetry's API), kept in ``app.extras``."""
    return app.extras[PLUGIN_NAME]


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    options = read_options(app)
    try:
        from cogworker.plugins.otel_tracing import Tracing
    except ImportError as exc:
        raise PluginError(
            f"plugin 'otel' needs OpenTelemetry's API, which is not installed ({exc}): "
            f"pip install '{EXTRA}', or deactivate the plugin with --plugin no:otel") from exc
    app.extras[PLUGIN_NAME] = Tracing(app, options)


@hookimpl
def cogworker_client_middleware(app: PluginHost) -> ClientMiddleware | None:
    middleware: ClientMiddleware = _tracing(app).producer
    return middleware


@hookimpl
def cogworker_server_middleware(app: PluginHost) -> ServerMiddleware | None:
    middleware: ServerMiddleware = _tracing(app).consumer
    return middleware
