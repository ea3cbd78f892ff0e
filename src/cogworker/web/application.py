"""Building the dashboard: its tabs (through the hook), routes, middleware and assets."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from cogworker.core.errors import BrokerUnavailableError, PluginError
from cogworker.web import builtin, exporter
from cogworker.web.access import AccessMiddleware
from cogworker.web.extension import Dashboard, Tab, dashboard
from cogworker.web.render import Renderer
from cogworker.web.security import SecurityMiddleware
from cogworker.web.settings import WebSettings

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger(__name__)


def collect_tabs(app: App) -> list[Tab]:
    """Every tab offered through ``cogworker_web_tabs`` (the built-ins included), in
    navigation order; a name offered twice is a :class:`PluginError`."""
    manager = app.hooks.plugin_manager
    if manager.get_plugin(builtin.PLUGIN_NAME) is None:
        manager.register(builtin, name=builtin.PLUGIN_NAME)
    tabs = app.hooks.web_tabs(app)
    seen: dict[str, Tab] = {}
    for tab in tabs:
        if not isinstance(tab, Tab):
            raise PluginError(f"cogworker_web_tabs returned {tab!r}, not a cogworker.web.Tab")
        if tab.name in seen:
            raise PluginError(f"two tabs are named {tab.name!r} ({seen[tab.name].label!r} and "
                              f"{tab.label!r}); give one plugin's tab another name")
        seen[tab.name] = tab
    return sorted(seen.values(), key=lambda tab: (tab.order, tab.label))


def _unavailable(request: Request, exc: Exception) -> Response:
    logger.warning("dashboard request %s failed: Redis is unavailable: %s", request.url.path,
                   exc)
    board = dashboard(request)
    try:
        return board.render(request, "unavailable.html", {"tab": "", "error": str(exc)},
                            status_code=503)
    except Exception:  # the page itself needs nothing from Redis; this is the last resort
        return PlainTextResponse(f"Redis is unavailable: {exc}", status_code=503)


def create_app(app: App, settings: WebSettings | None = None, **options: Any) -> Starlette:
    """The dashboard for ``app`` as an ASGI application.

    Mount it anywhere (``Mount("/cogworker", create_app(app))``; WSGI hosts through
    :func:`cogworker.web.wsgi.wsgi_app`) or run it with ``cogworker web``. ``options`` are
    :class:`WebSettings` fields, used when ``settings`` is not given.
    """
    settings = settings or WebSettings(**options)
    tabs = collect_tabs(app)
    renderer = Renderer(settings.time_format,
                        [tab.templates for tab in tabs if tab.templates is not None])
    board = Dashboard(app, settings, tabs, renderer)
    routes: list[BaseRoute] = [
        Mount("/static", StaticFiles(packages=[("cogworker.web", "static")]), name="static"),
    ]
    for tab in tabs:
        routes.extend(tab.routes)
    routes.append(exporter.route())
    web = Starlette(
        routes=routes,
        middleware=[Middleware(SecurityMiddleware, secret=settings.secret,
                               exempt=settings.csrf_exempt),
                    Middleware(AccessMiddleware, board=board)],
        exception_handlers={BrokerUnavailableError: _unavailable},
    )
    web.state.cogworker_dashboard = board
    return web
