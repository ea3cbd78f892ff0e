"""The Locks tab: unique and cron locks with owner and TTL, where the owner job is now, and
clearing a lock (or every orphaned one)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cogworker.api.lock_pages import clear_cron_lock, locate_owners, lock_page
from cogworker.plugins.unique_admin import clear_lock, clear_orphaned
from cogworker.web.actions import Form, Outcome, action_route
from cogworker.web.extension import Dashboard, Tab, dashboard
from cogworker.web.query import int_param, text_param

FRAGMENTS = {"table": "locks/_table.html"}
MAX_OWNERS = 200


def _context(board: Dashboard, request: Request) -> dict[str, Any]:
    query = text_param(request, "q")
    cursor = text_param(request, "cursor") or None
    per_page = int_param(request, "per", 50, 1, 200)
    page = lock_page(board.app, query=query, cursor=cursor, limit=per_page)
    located = request.query_params.get("locate") == "1"
    where = locate_owners(board.app, [lock.owner for lock in page.locks]) if located else None
    return {
        "tab": "locks", "path": "/locks",
        "state": {"q": query, "cursor": cursor or "", "per": per_page,
                  "locate": "1" if located else ""},
        "page": page, "where": where,
    }


def locks(request: Request) -> Response:
    board = dashboard(request)
    fragment = FRAGMENTS.get(request.query_params.get("fragment", ""))
    return board.render(request, fragment or "locks/page.html", _context(board, request))


def whereabouts(request: Request) -> Response:
    """Where each owner is (``?owner=`` repeated), as out-of-band swaps of the table cells."""
    board = dashboard(request)
    owners = request.query_params.getlist("owner")[:MAX_OWNERS]
    found = locate_owners(board.app, owners)
    kinds = request.query_params.getlist("kind")[:MAX_OWNERS]
    return board.render(request, "locks/_where.html",
                        {"owners": owners, "kinds": kinds, "where": found})


def _clear(board: Dashboard, request: Request, form: Form) -> Outcome:
    pjid = form.get("pjid", "")
    cleared = clear_cron_lock(board.app, pjid) if pjid else clear_lock(board.app,
                                                                         form.get("key", ""))
    return Outcome("released" if cleared else "gone", 1 if cleared else None)


def _clear_orphaned(board: Dashboard, request: Request, form: Form) -> Outcome:
    return Outcome("released", clear_orphaned(board.app))


def tab() -> Tab:
    routes = [
        Route("/locks", locks), Route("/locks/where", whereabouts),
        action_route("/locks/clear", _clear, "/locks"),
        action_route("/locks/clear_orphaned", _clear_orphaned, "/locks"),
    ]
    return Tab("locks", "Locks", routes, icon="lock-key", order=50)
