"""The exporter as an ASGI or WSGI app (to mount) and as a standalone HTTP server.

Each app has a registry of its own holding only :class:`FleetCollector`, so a scrape shows
the fleet's families and nothing of the process serving them. The response's content type
is prometheus-client's (``text/plain; version=0.0.4``, or OpenMetrics when asked for).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_asgi_app, make_wsgi_app

from cogworker.core.broker import Broker
from cogworker.plugins.metrics.options import DEFAULT_MAX_QUEUES, DEFAULT_MAX_SERIES
from cogworker.prometheus.collector import FleetCollector


def fleet_registry(broker: Broker, *, max_series: int = DEFAULT_MAX_SERIES,
                   max_queues: int = DEFAULT_MAX_QUEUES) -> CollectorRegistry:
    """A registry holding only the fleet collector of ``broker``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(broker, max_series=max_series, max_queues=max_queues))
    return registry


def asgi_app(broker: Broker, *, max_series: int = DEFAULT_MAX_SERIES,
             max_queues: int = DEFAULT_MAX_QUEUES) -> Callable[..., Any]:
    """An ASGI app answering every GET with the fleet's metrics (mount it at
    ``/metrics``: ``Mount("/metrics", app=asgi_app(app.broker))`` in Starlette)."""
    return make_asgi_app(fleet_registry(broker, max_series=max_series,
                                        max_queues=max_queues))


def wsgi_app(broker: Broker, *, max_series: int = DEFAULT_MAX_SERIES,
             max_queues: int = DEFAULT_MAX_QUEUES) -> Callable[..., Any]:
    """The same as a WSGI app (Flask, Django)."""
    return make_wsgi_app(fleet_registry(broker, max_series=max_series,
                                        max_queues=max_queues))


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log line per scrape."""


def make_exporter_server(broker: Broker, host: str, port: int, *,
                         max_series: int = DEFAULT_MAX_SERIES,
                         max_queues: int = DEFAULT_MAX_QUEUES) -> WSGIServer:
    """A bound HTTP server (not yet serving) answering ``/metrics``; ``port`` 0 picks one."""
    app = wsgi_app(broker, max_series=max_series, max_queues=max_queues)
    return make_server(host, port, app, handler_class=_QuietHandler)


def serve(broker: Broker, host: str, port: int, *, max_series: int = DEFAULT_MAX_SERIES,
          max_queues: int = DEFAULT_MAX_QUEUES,
          ready: Callable[[int], None] | None = None,
          stop: threading.Event | None = None) -> None:
    """Serve until interrupted (or until ``stop`` is set); ``ready(port)`` once bound."""
    server = make_exporter_server(broker, host, port, max_series=max_series,
                                  max_queues=max_queues)
    with server:
        if ready is not None:
            ready(server.server_port)
        if stop is None:
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                return
        else:
            def stop_when_asked() -> None:
                stop.wait()
                server.shutdown()

            watcher = threading.Thread(target=stop_when_asked, name="cogworker-exporter-stop",
                                       daemon=True)
            watcher.start()
            server.serve_forever()
