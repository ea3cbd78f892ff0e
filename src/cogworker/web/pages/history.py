"""The History tab: the run log (one row per run), filtered by status, class, queue, jid,
time range and error text, sorted by finish time or duration, paged on the server."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cogworker.api.metrics import Metrics, MetricsUnavailableError
from cogworker.api.status import job_statuses
from cogworker.core.broker.history import RunStatus, SortKey
from cogworker.core.errors import BrokerUnavailableError, CogworkerError
from cogworker.web.extension import Dashboard, Tab, dashboard
from cogworker.web.history_view import RANGES, HistoryFilters, read_page
from cogworker.web.plugin_state import plugin_off
from cogworker.web.query import Pager, choice_param, text_param

FRAGMENTS = {"table": "history/_table.html"}
CLASS_SUGGESTIONS = 100
MAX_CURSOR_CHARS = 4096
STATUS_CHOICES = ("all", "success", "failed")
SORTS: tuple[SortKey, ...] = ("finished_at", "duration")
ORDERS = ("desc", "asc")
RANGE_CHOICES = ("all", *RANGES)
RANGE_LABELS = {"all": "Any time", "15m": "Last 15 minutes", "1h": "Last hour",
                "6h": "Last 6 hours", "24h": "Last 24 hours", "7d": "Last 7 days",
                "30d": "Last 30 days"}


def _run_status(name: str) -> RunStatus | None:
    return "success" if name == "success" else "failed" if name == "failed" else None


def filters_of(request: Request) -> tuple[HistoryFilters, dict[str, Any]]:
    """The filters a request asks for, and the state its links keep."""
    status = choice_param(request, "status", STATUS_CHOICES, "all")
    sort = choice_param(request, "sort", SORTS, "finished_at")
    order = choice_param(request, "order", ORDERS, "desc")
    range_name = choice_param(request, "range", RANGE_CHOICES, "all")
    texts = {name: text_param(request, name) for name in ("class", "queue", "jid", "error")}
    filters = HistoryFilters(status=_run_status(status), job_class=texts["class"],
                             queue=texts["queue"], jid=texts["jid"], error=texts["error"],
                             range="" if range_name == "all" else range_name, sort=sort,
                             descending=order == "desc")
    state = {"status": status, "sort": sort, "order": order, "range": range_name, **texts}
    return filters, state


def _context(board: Dashboard, request: Request) -> dict[str, Any]:
    filters, state = filters_of(request)
    pager = Pager.from_request(request, None, board.settings.per_page)
    # not text_param: a cursor holds the index entry (a class name may be long), base64'd
    cursor = request.query_params.get("cursor", "").strip()[:MAX_CURSOR_CHARS] or None
    state.update(per=pager.per_page, page=pager.page, cursor=cursor or "")
    filtered = (any(state[name] for name in ("class", "queue", "jid", "error"))
                or state["status"] != "all" or state["range"] != "all")
    context: dict[str, Any] = {
        "tab": "history", "path": "/history", "state": state, "statuses": STATUS_CHOICES,
        "ranges": RANGE_LABELS, "off": plugin_off(board.app, "history"), "view": None,
        "bad_cursor": False, "filtered": filtered,
    }
    try:
        history = board.app.history
        if context["off"] is not None and not history.count():
            return context  # off here, and no worker recorded anything either
        context["off"] = None
        view = read_page(history, filters, per_page=pager.per_page, offset=pager.offset,
                         cursor=cursor)
    except ValueError:  # a cursor edited by hand, or from another filter
        context["bad_cursor"] = True
        return context
    except CogworkerError as exc:
        if isinstance(exc, BrokerUnavailableError):
            raise
        context.update(off=None, unavailable=str(exc))  # a broker that keeps no history
        return context
    context.update(view=view, pager=replace(pager, total=view.total or 0),
                   known_classes=_known_classes(board),
                   where=whereabouts(board, [record.jid for record in view.records]))
    return context


STATE_TO_TAB = {"queued": "enqueued", "interrupted": "enqueued", "scheduled": "scheduled",
                "working": "running", "retrying": "retrying", "failed": "dead"}
"""Where the status plugin says a job is, as the Jobs tab's state (the others: gone)."""


def whereabouts(board: Dashboard, jids: list[str]) -> dict[str, str]:
    """Per jid with a live status (one read for the page): the Jobs tab state holding it,
    or ``""`` when it finished or expired. A jid without one is absent (unknown: its row
    links to a lookup in every state)."""
    statuses = job_statuses(board.app, list(dict.fromkeys(jids)))
    return {jid: STATE_TO_TAB.get(status.state, "") for jid, status in statuses.items()}


def _known_classes(board: Dashboard) -> list[str]:
    """Class names for the class filter's suggestions: those the metrics plugin ranks
    (one bounded read), none when the broker keeps no metrics."""
    try:
        keys = Metrics(board.app).store.top_series(CLASS_SUGGESTIONS)
    except MetricsUnavailableError:
        return []
    return sorted({key.job_class for key in keys})


def history(request: Request) -> Response:
    board = dashboard(request)
    fragment = FRAGMENTS.get(request.query_params.get("fragment", ""))
    return board.render(request, fragment or "history/page.html", _context(board, request))


def tab() -> Tab:
    return Tab("history", "History", [Route("/history", history)],
               icon="clock-counter-clockwise", order=45)
