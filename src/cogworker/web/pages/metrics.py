"""The Metrics tab (at ``/timings``: ``/metrics`` is the Prometheus exporter): per class and
queue, runs, failures, failure rate, throughput and p50/p95/p99 over the last hour or day,
sortable, and one class's latency chart (the same figures as a table without JavaScript)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cogworker.api.metrics import ClassSummary, Metrics, MetricsPoint, MetricsUnavailableError
from cogworker.plugins.metrics.options import MetricsOptions, metrics_options
from cogworker.web.extension import Dashboard, Tab, dashboard
from cogworker.web.metrics_window import last_hour_summaries
from cogworker.web.plugin_state import plugin_off
from cogworker.web.query import Pager, choice_param, text_param

FRAGMENTS = {"table": "metrics/_table.html"}
WINDOWS = {"1h": 3600, "24h": 86400}
WINDOW_LABELS = {"1h": "Last hour", "24h": "Last 24 hours"}
LATENCY_SERIES = (("p50_ms", "p50"), ("p95_ms", "p95"), ("p99_ms", "p99"))


def _rate(row: ClassSummary) -> float:
    return row.failure_rate


SORTS: dict[str, Callable[[ClassSummary], Any]] = {
    "runs": lambda row: row.timings.runs, "failed": lambda row: row.failed,
    "failure_rate": _rate, "p50": lambda row: row.p50_ms or 0.0,
    "p95": lambda row: row.p95_ms or 0.0, "p99": lambda row: row.p99_ms or 0.0,
    "mean": lambda row: row.mean_ms or 0.0, "class": lambda row: (row.job_class, row.queue),
}
SORT_NAMES = tuple(SORTS)


@dataclass(frozen=True)
class ClassRow:
    """One table row: the summary and its throughput over the window (runs a minute)."""

    summary: ClassSummary
    per_minute: float


def metrics_options_of(board: Dashboard) -> MetricsOptions:
    settings = board.app.settings
    return metrics_options(settings.plugin_options, settings.sources.get("plugin_options"))


def metrics_of(board: Dashboard) -> Metrics:
    options = metrics_options_of(board)
    return Metrics(board.app, minute_retention=options.minute_retention,
                   hour_retention=options.hour_retention)


def sorted_rows(rows: list[ClassSummary], sort: str, window: float) -> list[ClassRow]:
    """``rows`` by ``sort`` (largest first; class names A to Z)."""
    key = SORTS[sort]
    ordered = sorted(rows, key=key, reverse=sort != "class")
    return [ClassRow(row, row.timings.runs / (window / 60)) for row in ordered]


def _context(board: Dashboard, request: Request) -> dict[str, Any]:
    window_name = choice_param(request, "range", tuple(WINDOWS), "1h")
    sort = choice_param(request, "sort", SORT_NAMES, "runs")
    chosen = text_param(request, "class")
    pager = Pager.from_request(request, None, board.settings.per_page)
    state = {"range": window_name, "sort": sort, "class": chosen, "per": pager.per_page,
             "page": pager.page}
    context: dict[str, Any] = {"tab": "metrics", "path": "/timings", "state": state,
                               "windows": WINDOW_LABELS, "off": plugin_off(board.app, "metrics"),
                               "rows": [], "points": [], "chart_class": "",
                               "series": LATENCY_SERIES, "pager": pager}
    window = WINDOWS[window_name]
    metrics = metrics_of(board)
    try:
        if context["off"] is not None and not metrics.store.series_count():
            return context  # off here, and no worker recorded anything either
        context["off"] = None
        limit = metrics_options_of(board).max_series
        summaries = (last_hour_summaries(metrics, limit) if window_name == "1h"
                     else metrics.summaries(since=window, limit=limit))
        rows = sorted_rows(summaries, sort, window)
    except MetricsUnavailableError as exc:
        context["unavailable"] = str(exc)
        return context
    classes = sorted({row.summary.job_class for row in rows})
    chart_class = chosen or (rows[0].summary.job_class if rows else "")
    wants_chart = request.query_params.get("fragment") != "table"  # Live polls the table
    points = metrics.series(chart_class, since=window) if chart_class and wants_chart else []
    context.update(rows=rows[pager.offset:pager.offset + pager.per_page], classes=classes,
                   chart_class=chart_class, points=[p for p in points if p.timings.runs],
                   pager=replace(pager, total=len(rows)), window=window)
    return context


def timings(request: Request) -> Response:
    board = dashboard(request)
    fragment = FRAGMENTS.get(request.query_params.get("fragment", ""))
    return board.render(request, fragment or "metrics/page.html", _context(board, request))


def _point_json(points: list[MetricsPoint]) -> dict[str, list[Any]]:
    dicts = [point.to_dict() for point in points]
    out: dict[str, list[Any]] = {"labels": [item["time"] for item in dicts]}
    for key, _label in LATENCY_SERIES:
        out[key] = [item[key] for item in dicts]
    return out


def series_data(request: Request) -> Response:
    """One class's latency series: ``{"labels": [...ISO], "p50_ms": [...], ...}`` (nulls
    where nothing ran); 404 while the metrics plugin is off and nothing was recorded."""
    board = dashboard(request)
    window = WINDOWS[choice_param(request, "range", tuple(WINDOWS), "1h")]
    job_class = text_param(request, "class")
    metrics = metrics_of(board)
    try:
        if plugin_off(board.app, "metrics") is not None and not metrics.store.series_count():
            return JSONResponse({"error": "the metrics plugin is off and nothing was recorded"},
                                status_code=404)
        points = metrics.series(job_class, since=window) if job_class else []
    except MetricsUnavailableError as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    return JSONResponse(_point_json(points), headers={"cache-control": "no-store"})


def tab() -> Tab:
    routes = [Route("/timings", timings), Route("/timings/series.json", series_data)]
    return Tab("metrics", "Metrics", routes, icon="lightning", order=60, path="/timings")
