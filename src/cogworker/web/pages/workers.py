"""The Workers tab: one card per live process with its in-flight jobs; quiet, resume and stop
one process, or pause and resume intake for the whole fleet."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cogworker.api.fleet_pages import PROCESS_SORTS, fleet_summary, process_page, signal_fleet
from cogworker.api.processes import ProcessSet
from cogworker.web.actions import Form, Outcome, action_route
from cogworker.web.extension import Dashboard, Tab, dashboard
from cogworker.web.query import Pager, choice_param, text_param

FRAGMENTS = {"cards": "workers/_cards.html"}
JOBS_PER_CARD = 10
CARDS_PER_PAGE = 10


def _context(board: Dashboard, request: Request) -> dict[str, Any]:
    query = text_param(request, "q")
    sort = choice_param(request, "sort", PROCESS_SORTS, "identity")
    pager = Pager.from_request(request, None, CARDS_PER_PAGE)
    page = process_page(board.app, query=query, sort=sort, offset=pager.offset,
                        limit=pager.per_page, jobs_per_process=JOBS_PER_CARD,
                        heartbeat_ttl=board.app.settings.heartbeat_ttl)
    return {
        "tab": "workers", "path": "/workers",
        "state": {"q": query, "sort": sort, "per": pager.per_page, "page": pager.page},
        "page": page, "pager": replace(pager, total=page.total),
        "heartbeat_interval": board.app.settings.heartbeat_interval,
    }


def workers(request: Request) -> Response:
    board = dashboard(request)
    fragment = FRAGMENTS.get(request.query_params.get("fragment", ""))
    return board.render(request, fragment or "workers/page.html", _context(board, request))


def summary(request: Request) -> Response:
    """The fleet pill in the header (polled on every page)."""
    board = dashboard(request)
    return board.render(request, "workers/_summary.html",
                        {"fleet": fleet_summary(board.app)})


def _signal(board: Dashboard, request: Request, form: Form) -> Outcome:
    action = request.path_params["action"]
    process = ProcessSet(board.app).get(form.get("identity", ""))
    if process is None or action not in ("quiet", "resume", "stop"):
        return Outcome("gone")
    getattr(process, action)()
    return Outcome({"quiet": "quieted", "resume": "resumed", "stop": "stopping"}[action])


def _pause_all(board: Dashboard, request: Request, form: Form) -> Outcome:
    return Outcome("fleet_paused", signal_fleet(board.app, "quiet"))


def _resume_all(board: Dashboard, request: Request, form: Form) -> Outcome:
    return Outcome("fleet_resumed", signal_fleet(board.app, "resume"))


def tab() -> Tab:
    routes = [
        Route("/workers", workers), Route("/workers/summary", summary),
        action_route("/workers/pause_all", _pause_all, "/workers"),
        action_route("/workers/resume_all", _resume_all, "/workers"),
        action_route("/workers/{action}", _signal, "/workers"),
    ]
    return Tab("workers", "Workers", routes, icon="cpu", order=40)
