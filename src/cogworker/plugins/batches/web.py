"""The Batches tab of the dashboard: batches newest first, and one batch's counts,
callbacks and members by state. Read-only (cancel with ``cogworker batches cancel``).
Imported only when the dashboard is built (it needs the ``web`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cogworker.api.batches import Batches
from cogworker.core.broker.batches import MEMBER_STATES
from cogworker.web.extension import Tab, dashboard
from cogworker.web.query import int_param, text_param

TEMPLATES = Path(__file__).parent / "templates"
PER_PAGE = 25
MEMBERS_PER_PAGE = 100


def batches_page(request: Request) -> Response:
    board = dashboard(request)
    page = int_param(request, "page", 1, 1, 1_000_000)
    found = Batches(board.app).list(page=page, per_page=PER_PAGE)
    return board.render(request, "batches/page.html",
                        {"tab": "batches", "path": "/batches", "found": found,
                         "state": {"page": page}})


def batch_page(request: Request) -> Response:
    board = dashboard(request)
    bid = str(request.path_params["bid"])
    state = text_param(request, "state") or "pending"
    if state not in MEMBER_STATES:
        state = "pending"
    page = int_param(request, "page", 1, 1, 1_000_000)
    batches = Batches(board.app)
    info = batches.get(bid)
    context: dict[str, Any] = {"tab": "batches", "path": f"/batches/{bid}", "bid": bid,
                               "info": info, "states": MEMBER_STATES, "shown": state,
                               "state": {"state": state, "page": page}}
    if info is None:
        return board.render(request, "batches/show.html", context, status_code=404)
    context["members"] = batches.jobs(bid, state, page=page,  # type: ignore[arg-type]
                                      per_page=MEMBERS_PER_PAGE)
    return board.render(request, "batches/show.html", context)


def tab() -> Tab:
    routes = [Route("/batches", batches_page), Route("/batches/{bid}", batch_page)]
    return Tab("batches", "Batches", routes, icon="queue", order=60, templates=TEMPLATES)
