"""What a tab is, and what a route handler gets from the dashboard it runs in.

A :class:`Tab` is a navigation entry plus the Starlette routes behind it; a plugin returns
tabs from the ``cogworker_web_tabs`` hook, exactly as the built-in tabs do. A handler
reaches the dashboard with :func:`dashboard`::

    def my_page(request):
        board = dashboard(request)
        return board.render(request, "mytab/page.html", {"rows": rows_of(board.app)})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute

from cogworker.api.fleet_pages import FleetSummary, fleet_summary
from cogworker.core.errors import BrokerUnavailableError
from cogworker.web.render import Renderer
from cogworker.web.security import STATE_KEY

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.web.settings import WebSettings

NOTICE_KEYS = frozenset({
    "retried", "deleted", "cleared", "rescheduled", "gone", "not_requeueable", "paused",
    "resumed", "quieted", "stopping", "ran", "disabled", "enabled", "released",
    "fleet_paused", "fleet_resumed", "unconfirmed",
})
"""The one-line notices an action may leave (never free text from a request)."""


@dataclass(frozen=True)
class Tab:
    """One navigation tab and its routes.

    :param name: its id, unique over every tab (``"jobs"``); the default link is ``/<name>``.
    :param label: the text in the navigation.
    :param routes: Starlette routes, paths relative to the dashboard's prefix.
    :param icon: an icon of the dashboard's sprite (``stack``, ``cpu``...).
    :param order: place in the navigation (built-ins use 10 to 60).
    :param templates: a folder of the plugin's Jinja templates, searched after the
        dashboard's own (name them ``<tab name>/...`` so they never clash).
    :param path: the link, when it is not ``/<name>``.
    """

    name: str
    label: str
    routes: Sequence[BaseRoute]
    icon: str = "circle"
    order: int = 100
    templates: Path | None = None
    path: str | None = None

    @property
    def link(self) -> str:
        return self.path or f"/{self.name}"


@dataclass
class Dashboard:
    """The running dashboard: the app it shows, its settings, tabs and templates."""

    app: App
    settings: WebSettings
    tabs: list[Tab]
    renderer: Renderer = field(repr=False)

    # -- urls ----------------------------------------------------------------------------

    @staticmethod
    def prefix(request: Request) -> str:
        """Where the dashboard is mounted (``""`` at the root)."""
        return str(request.scope.get("root_path", "")).rstrip("/")

    def url(self, request: Request, path: str, params: Mapping[str, Any] | None = None) -> str:
        """``path`` under the mount prefix, with the non-empty ``params`` as a query."""
        query = urlencode({k: v for k, v in (params or {}).items()
                           if v is not None and v != ""})
        return self.prefix(request) + path + (f"?{query}" if query else "")

    @staticmethod
    def here(request: Request) -> str:
        """This page's URL without the one-time parts (notice, count, fragment)."""
        params = [(k, v) for k, v in _query_pairs(request.url.query)
                  if k not in ("notice", "n", "fragment")]
        return request.url.path + ("?" + urlencode(params) if params else "")

    def safe_back(self, request: Request, back: str | None, default: str) -> str:
        """``back`` when it is a path of this dashboard, else ``default`` (never off-site)."""
        prefix = self.prefix(request)
        parts = urlsplit(back or "")
        if (back and not parts.scheme and not parts.netloc and back.startswith(prefix + "/")
                and not back.startswith("//") and "\\" not in back):
            return back
        return self.url(request, default)

    # -- responses -----------------------------------------------------------------------

    def can_act(self, request: Request) -> bool:
        """Whether this request may see and use actions (False in read-only mode)."""
        return bool(getattr(request.state, "can_act", not self.settings.read_only))

    def render(self, request: Request, template: str, context: Mapping[str, Any],
               status_code: int = 200) -> HTMLResponse:
        """A page (or, with ``?fragment=``, the named fragment template) as HTML."""
        notice = request.query_params.get("notice")
        count = request.query_params.get("n", "")
        base = {
            "request": request, "board": self, "tabs": self.tabs,
            "prefix": self.prefix(request), "settings": self.settings,
            "can_act": self.can_act(request),
            "csrf_token": request.scope.get("state", {}).get(STATE_KEY, ""),
            "notice": notice if notice in NOTICE_KEYS else None,
            "notice_count": int(count) if count.isdigit() else None,
            "here": self.here(request),
        }
        base["fleet_summary"] = self._fleet_summary
        html = self.renderer.render(template, {**base, **context})
        response = HTMLResponse(html, status_code=status_code)
        response.headers["cache-control"] = "no-store"
        return response

    def _fleet_summary(self) -> FleetSummary | None:
        """The header's fleet pill (None while Redis is unavailable: the page still shows)."""
        try:
            return fleet_summary(self.app)
        except BrokerUnavailableError:
            return None

    def after_action(self, request: Request, back: str | None, default: str, *,
                     notice: str | None = None, count: int | None = None,
                     fragment: str | None = None) -> Response:
        """303 back to the page the form was on, with a notice; an htmx request is sent to
        the page's fragment instead, so only that part is swapped."""
        target = self.safe_back(request, back, default)
        path, _, query = target.partition("?")
        params = [(k, v) for k, v in _query_pairs(query)
                  if k not in ("notice", "n", "fragment")]
        if notice is not None:
            params.append(("notice", notice))
        if count is not None:
            params.append(("n", str(count)))
        if fragment and request.headers.get("hx-request") == "true":
            params.append(("fragment", fragment))
        return RedirectResponse(path + ("?" + urlencode(params) if params else ""), 303)


def _query_pairs(query: str) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl

    return parse_qsl(query, keep_blank_values=False)


def dashboard(request: Request) -> Dashboard:
    """The dashboard serving this request (for a plugin's route handlers)."""
    board = getattr(request.app.state, "cogworker_dashboard", None)
    if board is None:
        raise RuntimeError("this request is not served by a cogworker dashboard "
                           "(build the app with cogworker.web.create_app)")
    return board  # type: ignore[no-any-return]
