"""The OpenTelemetry SDK set-up the ``otel`` plugin's tests share.

A process may set the global tracer provider once, so every test module uses this one,
and its spans reach the SDK's in-memory exporter :data:`EXPORTER`.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()
_attached: list[TracerProvider] = []


def in_memory_exporter() -> InMemorySpanExporter:
    """:data:`EXPORTER`, receiving every span this process ends from now on (emptied)."""
    if not _attached:
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        _attached.append(provider)
    EXPORTER.clear()
    return EXPORTER
