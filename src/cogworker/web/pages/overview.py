"""The Overview tab: counters, queues (pause, resume, retry all, clear), the 24-hour
throughput chart and Redis's vital signs."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cogworker.api.job_pages import job_counts
from cogworker.api.queue_pages import QUEUE_SORTS, queue_page
from cogworker.api.queues import Queue
from cogworker.api.sorted_sets import RetrySet
from cogworker.api.stats import Stats
from cogworker.web.actions import Form, Outcome, action_route
from cogworker.web.daily_runs import PERIODS, daily_runs
from cogworker.web.extension import Dashboard, Tab, dashboard
from cogworker.web.query import Pager, choice_param, text_param

FRAGMENTS = {"counters": "overview/_counters.html", "queues": "overview/_queues.html",
             "redis": "overview/_redis.html"}
REDIS_FIELDS = (
    ("Version", "redis_version"), ("Uptime (days)", "uptime_in_days"),
    ("Connections", "connected_clients"), ("Memory usage", "used_memory_human"),
    ("Peak memory usage", "used_memory_peak_human"), ("Operations/s", "instantaneous_ops_per_sec"),
)


@dataclass(frozen=True)
class ChartPanel:
    """A chart on the Overview: it loads itself from ``data_path`` (JSON) and redraws in
    place while Live is on. More panels (runs per day) join this list."""

    name: str
    title: str
    data_path: str
    series: tuple[tuple[str, str], ...]
    """(key in the JSON, label) per line."""
    tip: str = "%H:00"
    """How the pointer's label shows a point's time (strftime, browser-local)."""


THROUGHPUT = ChartPanel("throughput", "Throughput, last 24 hours", "/overview/throughput.json",
                        (("processed", "Processed"), ("failed", "Failed")))


def daily_panel(days: int) -> ChartPanel:
    return ChartPanel("daily", f"Runs per day, last {days} days",
                      f"/overview/daily.json?days={days}",
                      (("success", "Succeeded"), ("failed", "Failed")), tip="%a %d %b")


def _context(board: Dashboard, request: Request) -> dict[str, Any]:
    app = board.app
    stats = Stats(app)
    query = text_param(request, "q")
    sort = choice_param(request, "sort", QUEUE_SORTS, "name")
    pager = Pager.from_request(request, None, board.settings.per_page)
    page = queue_page(app, query=query, sort=sort, offset=pager.offset, limit=pager.per_page)
    info = stats.redis_info()
    throughput = stats.throughput(24)
    days = _days(request)
    return {
        "tab": "overview", "path": "/overview",
        "state": {"q": query, "sort": sort, "per": pager.per_page, "page": pager.page,
                  "days": days},
        "counts": job_counts(app), "processed": stats.processed, "failed": stats.failed,
        "queues": page, "pager": replace(pager, total=page.total),
        "redis": [(label, info.get(name, "n/a")) for label, name in REDIS_FIELDS],
        "charts": (THROUGHPUT, daily_panel(days)), "throughput": throughput,
        "daily": daily_runs(app, days), "periods": PERIODS,
    }


def _days(request: Request) -> int:
    return int(choice_param(request, "days", tuple(str(n) for n in PERIODS), "7"))


def overview(request: Request) -> Response:
    board = dashboard(request)
    context = _context(board, request)
    fragment = FRAGMENTS.get(request.query_params.get("fragment", ""))
    return board.render(request, fragment or "overview/page.html", context)


def throughput_data(request: Request) -> Response:
    """24 hourly points: ``{"labels": [...ISO hours], "processed": [...], "failed": [...]}``."""
    points = Stats(dashboard(request).app).throughput(24)
    return JSONResponse({"labels": [p["time"] for p in points],
                         "processed": [p["processed"] for p in points],
                         "failed": [p["failed"] for p in points]},
                        headers={"cache-control": "no-store"})


def daily_data(request: Request) -> Response:
    """Runs per UTC day: ``{"source": "history"|"counters", "labels": [...ISO days],
    "success": [...], "failed": [...]}`` for ``?days=`` 7, 30 or 90."""
    runs = daily_runs(dashboard(request).app, _days(request))
    return JSONResponse(runs.to_json(), headers={"cache-control": "no-store"})


def _pause(board: Dashboard, request: Request, form: Form) -> Outcome:
    Queue(board.app, form.get("queue", "")).pause()
    return Outcome("paused")


def _resume(board: Dashboard, request: Request, form: Form) -> Outcome:
    Queue(board.app, form.get("queue", "")).resume()
    return Outcome("resumed")


def _retry_all(board: Dashboard, request: Request, form: Form) -> Outcome:
    return Outcome("retried", RetrySet(board.app).retry_all(queue=form.get("queue", "")))


def _clear(board: Dashboard, request: Request, form: Form) -> Outcome:
    """Delete every job of the queue; the form must repeat the queue's name."""
    name = form.get("queue", "")
    if not name or form.get("confirm", "").strip() != name:
        return Outcome("unconfirmed")
    queue = Queue(board.app, name)
    size = queue.size()
    queue.clear()
    return Outcome("cleared", size)


def tab() -> Tab:
    routes = [
        Route("/", overview), Route("/overview", overview),
        Route("/overview/throughput.json", throughput_data),
        Route("/overview/daily.json", daily_data),
        action_route("/queues/pause", _pause, "/overview"),
        action_route("/queues/resume", _resume, "/overview"),
        action_route("/queues/retry_all", _retry_all, "/overview"),
        action_route("/queues/clear", _clear, "/overview"),
    ]
    return Tab("overview", "Overview", routes, icon="gauge", order=10)
