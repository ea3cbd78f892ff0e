"""Action routes: a form POST does one thing, then goes back to the page it came from.

Without JavaScript the answer is a 303 to that page (with a one-line notice); with htmx the
redirect lands on the page's fragment, so only the table the form was in is swapped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cogworker.core.errors import PayloadError
from cogworker.web.extension import Dashboard, dashboard

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What an action did: a notice key (see ``NOTICE_KEYS``) and an optional count."""

    notice: str | None = None
    count: int | None = None


Form = Mapping[str, str]
Perform = Callable[[Dashboard, Request, Form], Outcome]


def action_route(path: str, perform: Perform, default: str) -> Route:
    """A POST route running ``perform`` on a worker thread; ``default`` is the page to go
    back to when the form names none (or names one outside the dashboard)."""

    async def endpoint(request: Request) -> Response:
        board = dashboard(request)
        form = await request.form()
        fields = {name: value for name, value in form.items() if isinstance(value, str)}
        try:
            outcome = await run_in_threadpool(perform, board, request, fields)
        except PayloadError:
            outcome = Outcome("not_requeueable")
        except ValueError as exc:  # a form naming nothing that exists (an empty queue name)
            logger.info("dashboard action %s refused: %s", request.url.path, exc)
            outcome = Outcome("gone")
        return board.after_action(request, fields.get("back"), default, notice=outcome.notice,
                                  count=outcome.count, fragment=fields.get("fragment"))

    return Route(path, endpoint, methods=["POST"])


def float_field(form: Form, name: str) -> float | None:
    """A number from the form, or None when absent or not a number."""
    try:
        return float(form[name])
    except (KeyError, ValueError):
        return None


def int_field(form: Form, name: str, default: int) -> int:
    try:
        return int(form[name])
    except (KeyError, ValueError):
        return default
