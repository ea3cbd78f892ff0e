"""``<prefix>/metrics``: the Prometheus exporter (:mod:`cogworker.prometheus`) inside the
dashboard, behind the same authorization as its pages.

Served whether or not the metrics plugin is on: the core families (processed, failed, set
and queue sizes, busy workers) come from the broker's core facets; the per-class duration
histograms are simply absent while nothing records them. The collector reads the broker,
so a scrape runs on a worker thread, never on the event loop.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cogworker.prometheus.serving import fleet_registry
from cogworker.web.extension import dashboard
from cogworker.web.pages.metrics import metrics_options_of

PATH = "/metrics"


def _registry(request: Request) -> CollectorRegistry:
    board = dashboard(request)
    registry: CollectorRegistry | None = getattr(request.app.state, "cogworker_exporter",
                                                 None)
    if registry is None:
        options = metrics_options_of(board)
        registry = fleet_registry(board.app.broker, max_series=options.max_series,
                                  max_queues=options.max_queues)
        request.app.state.cogworker_exporter = registry
    return registry


async def scrape(request: Request) -> Response:
    registry = _registry(request)
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    body = await run_in_threadpool(encoder, registry)
    return Response(body, media_type=None, headers={"content-type": content_type,
                                                    "cache-control": "no-store"})


def route() -> Route:
    return Route(PATH, scrape, methods=["GET", "HEAD"], name="prometheus")
