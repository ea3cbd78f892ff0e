"""The Jobs tab: one table over running, enqueued, retrying, scheduled and dead jobs, with a
status filter, search, paging, a detail panel, and retry / reschedule / delete / delete all."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cogworker.api.job_actions import clear_jobs, delete_job, reschedule, retry_now
from cogworker.api.job_lookup import find_job
from cogworker.api.job_pages import list_jobs, search_jobs
from cogworker.api.job_rows import STATUSES, Status
from cogworker.web.actions import Form, Outcome, action_route, float_field, int_field
from cogworker.web.extension import Dashboard, Tab, dashboard
from cogworker.web.plugin_state import plugin_off
from cogworker.web.query import Pager, choice_param, text_param

N = TypeVar("N", int, float)
FRAGMENTS = {"table": "jobs/_table.html", "detail": "jobs/_detail.html"}
STATUS_CHOICES = ("all", *STATUSES)
ORDERS = ("newest", "oldest")
STATUS_LABELS = {"all": "All", "running": "Running", "enqueued": "Enqueued",
                 "retrying": "Retrying", "scheduled": "Scheduled", "dead": "Dead"}


def _status(value: str) -> Status | None:
    return next((status for status in STATUSES if status == value), None)


def _number(value: str, kind: type[N]) -> N | None:
    """A hint from the query string, or None when it is absent or not a number."""
    try:
        return kind(value) if value else None
    except ValueError:
        return None


def _context(board: Dashboard, request: Request) -> dict[str, Any]:
    app = board.app
    status_name = choice_param(request, "status", STATUS_CHOICES, "all")
    status = _status(status_name)
    query = text_param(request, "q")
    queue = text_param(request, "queue") or None
    order = choice_param(request, "order", ORDERS, "newest")
    cursor = text_param(request, "cursor") or None
    pager = Pager.from_request(request, None, board.settings.per_page)
    if query:
        page = search_jobs(app, query, status=status, queue=queue, cursor=cursor,
                           limit=pager.per_page, newest_first=order == "newest")
    else:
        page = list_jobs(app, status=status, queue=queue, offset=pager.offset,
                         limit=pager.per_page, newest_first=order == "newest")
    selected_jid = text_param(request, "selected")
    selected_in = _status(text_param(request, "in"))
    hints = {"sq": text_param(request, "sq"), "ss": text_param(request, "ss"),
             "sp": text_param(request, "sp")}
    selected = find_job(app, selected_jid, selected_in, queue=hints["sq"] or None,
                        score=_number(hints["ss"], float),
                        position=_number(hints["sp"], int)) if selected_jid else None
    state = {"status": status_name, "q": query, "queue": queue or "", "order": order,
             "per": pager.per_page, "page": pager.page, "cursor": cursor or "",
             "selected": selected_jid, "in": selected_in or "", **hints}
    return {
        "tab": "jobs", "path": "/jobs", "state": state, "page": page,
        "pager": replace(pager, total=page.total or 0), "selected": selected,
        "selected_jid": selected_jid, "statuses": STATUS_CHOICES, "labels": STATUS_LABELS,
        **_observed(board, selected_jid),
    }


def _observed(board: Dashboard, jid: str) -> dict[str, Any]:
    """The selected job's live status and failure trail (read even when the plugins are off
    here: workers elsewhere may record them), and which plugin is off when there is none."""
    app = board.app
    live_status = app.status(jid) if jid else None
    attempts = app.attempts(jid) if jid else []
    return {"live_status": live_status, "attempts": attempts,
            "status_off": plugin_off(app, "status") if live_status is None else None,
            "attempts_off": plugin_off(app, "attempts") if not attempts else None}


def jobs(request: Request) -> Response:
    board = dashboard(request)
    fragment = FRAGMENTS.get(request.query_params.get("fragment", ""))
    return board.render(request, fragment or "jobs/page.html", _context(board, request))


def _target(request: Request) -> Status:
    status = _status(request.path_params["status"])
    if status is None:
        raise ValueError(f"no job state {request.path_params['status']!r}")
    return status


def _retry(board: Dashboard, request: Request, form: Form) -> Outcome:
    status = _target(request)
    if status not in ("retrying", "scheduled", "dead"):
        return Outcome("gone")
    moved = retry_now(board.app, status, form.get("jid", ""), float_field(form, "score"))
    return Outcome("retried" if moved else "gone", 1 if moved else None)


def _delete(board: Dashboard, request: Request, form: Form) -> Outcome:
    status = _target(request)
    if status == "running":
        return Outcome("gone")
    position = float_field(form, "position")
    removed = delete_job(board.app, status, form.get("jid", ""),
                         score=float_field(form, "score"), queue=form.get("queue") or None,
                         position=None if position is None else int(position))
    return Outcome("deleted" if removed else "gone", 1 if removed else None)


def _reschedule(board: Dashboard, request: Request, form: Form) -> Outcome:
    status = _target(request)
    if status not in ("retrying", "scheduled"):
        return Outcome("gone")
    moved = reschedule(board.app, status, form.get("jid", ""), int_field(form, "minutes", 5),
                       score=float_field(form, "score"))
    return Outcome("rescheduled" if moved else "gone")


def _clear(board: Dashboard, request: Request, form: Form) -> Outcome:
    """Delete every job of one state; the form must repeat the state's name."""
    status = _target(request)
    if status == "running" or form.get("confirm", "").strip().lower() != status:
        return Outcome("unconfirmed")
    if status == "enqueued" and not form.get("queue"):
        return Outcome("unconfirmed")
    return Outcome("cleared", clear_jobs(board.app, status, form.get("queue") or None))


def tab() -> Tab:
    routes = [
        Route("/jobs", jobs),
        action_route("/jobs/{status}/retry", _retry, "/jobs"),
        action_route("/jobs/{status}/delete", _delete, "/jobs"),
        action_route("/jobs/{status}/reschedule", _reschedule, "/jobs"),
        action_route("/jobs/{status}/clear", _clear, "/jobs"),
    ]
    return Tab("jobs", "Jobs", routes, icon="stack", order=20)
