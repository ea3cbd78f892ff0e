"""The Schedules tab: cron entries with next and last run; run now, disable, enable."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from cogworker.api.schedule_pages import SCHEDULE_SORTS, schedule_page
from cogworker.core.errors import UnknownPeriodicEntryError
from cogworker.periodic import admin
from cogworker.web.actions import Form, Outcome, action_route
from cogworker.web.extension import Dashboard, Tab, dashboard
from cogworker.web.query import Pager, choice_param, text_param

FRAGMENTS = {"table": "schedules/_table.html"}


def _context(board: Dashboard, request: Request) -> dict[str, Any]:
    query = text_param(request, "q")
    sort = choice_param(request, "sort", SCHEDULE_SORTS, "next_run")
    pager = Pager.from_request(request, None, board.settings.per_page)
    page = schedule_page(board.app, query=query, sort=sort, offset=pager.offset,
                         limit=pager.per_page)
    return {
        "tab": "schedules", "path": "/schedules",
        "state": {"q": query, "sort": sort, "per": pager.per_page, "page": pager.page},
        "page": page, "pager": replace(pager, total=page.total),
    }


def schedules(request: Request) -> Response:
    board = dashboard(request)
    fragment = FRAGMENTS.get(request.query_params.get("fragment", ""))
    return board.render(request, fragment or "schedules/page.html", _context(board, request))


def _entry_action(board: Dashboard, request: Request, form: Form) -> Outcome:
    pjid = request.path_params["pjid"]
    action = request.path_params["action"]
    try:
        if action == "run_now":
            admin.run_now(board.app, pjid)
            return Outcome("ran")
        if action == "disable":
            admin.disable(board.app, pjid)
            return Outcome("disabled")
        if action == "enable":
            admin.enable(board.app, pjid)
            return Outcome("enabled")
    except UnknownPeriodicEntryError:
        pass
    return Outcome("gone")


def tab() -> Tab:
    from starlette.routing import Route

    routes = [
        Route("/schedules", schedules),
        action_route("/schedules/{pjid}/{action}", _entry_action, "/schedules"),
    ]
    return Tab("schedules", "Schedules", routes, icon="calendar-dots", order=30)
