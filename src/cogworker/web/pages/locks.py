"""The Locks tab: unique and cron locks with owner and TTL, where the owner job is now, and
clearing a lock (or every orphaned one)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cogworker.api.lock_pages import clear_cron_lock, lock_page
from cogworker.api.owner_search import locate
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
    located = (locate(board.app, [lock.owner for lock in page.locks])
               if request.query_params.get("locate") == "1" else None)
    return {
        "tab": "locks", "path": "/locks",
        "state": {"q": query, "cursor": cursor or "", "per": per_page,
                  "locate": "1" if located else ""},
        "page": page, "where": None if located is None else located.found,
        "where_complete": located is not None and located.cursor is None,
    }


def locks(request: Request) -> Response:
    board = dashboard(request)
    fragment = FRAGMENTS.get(request.query_params.get("fragment", ""))
    return board.render(request, fragment or "locks/page.html", _context(board, request))


def whereabouts(request: Request) -> Response:
    """Where owners are: ``owner``, ``kind`` and ``i`` (the table cell) repeated, and the
    ``from`` cursor of an earlier answer. Answers with out-of-band swaps of the cells found
    (all of them once the search is complete) and, while it is not, the request that goes
    on looking for the others."""
    board = dashboard(request)
    params = request.query_params
    owners = params.getlist("owner")[:MAX_OWNERS]
    kinds = params.getlist("kind")[: len(owners)]
    cells = params.getlist("i")[: len(owners)]
    located = locate(board.app, owners, params.get("from") or None)
    rows = [{"owner": owner, "kind": kinds[n] if n < len(kinds) else "",
             "cell": cells[n] if n < len(cells) and cells[n].isdigit() else str(n),
             "seen": located.found.get(owner)} for n, owner in enumerate(owners)]
    return board.render(request, "locks/_where.html",
                        {"rows": rows, "cursor": located.cursor})


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
