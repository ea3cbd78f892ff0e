"""Hook specifications: web dashboard."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from collections.abc import Sequence

    from starlette.requests import Request
    from starlette.responses import Response

    from cogworker.core.plugin_host import PluginHost

SECTION = "Web dashboard"
"""The title of these hooks in the hook reference."""


@hookspec
def cogworker_web_tabs(app: PluginHost) -> Sequence[object] | None:
    """Add tabs, and the routes behind them, to the dashboard.

    Called once when the dashboard is built (:func:`cogworker.web.create_app`), before it
    serves a request. The built-in tabs come through this hook too, so a plugin's tab is
    in every way a peer of Overview or Jobs.

    :param app: the application the dashboard shows.

    Return a list of :class:`cogworker.web.Tab` (or None). The navigation lists every tab
    by its ``order`` (built-ins use 10 to 50; the default 100 puts a plugin's tab after
    them), then its label. Routes are mounted under the dashboard's prefix; a tab name
    claimed twice is an error naming both.

    Failure policy: propagates (the dashboard does not start with a broken tab).

    Implemented by builtin: web-tabs (Overview, Jobs, Schedules, Workers, Locks; the
    dashboard registers it itself when it is built), batches (the Batches tab).

    Example::

        from starlette.routing import Route
        from cogworker.web import Tab, dashboard

        def slow_jobs(request):
            return dashboard(request).render(request, "slow/index.html", {"rows": ...})

        @cogworker.hookimpl
        def cogworker_web_tabs(app):
            return [Tab("slow", "Slow jobs", [Route("/slow", slow_jobs)],
                        templates=Path(__file__).parent / "templates")]
    """


@hookspec
def cogworker_web_authorize(app: PluginHost, request: Request,
                            action: str) -> bool | Response | None:
    """Decide whether a dashboard request may go on: authentication and roles.

    Called for every request but static assets, with ``action`` ``"view"`` for GET, HEAD
    and OPTIONS and ``"act"`` for anything that changes state; for pages also once with
    ``"act"`` to decide whether to show the action buttons (a read-only role sees none).
    Runs on a worker thread, so it may read a session store or call an identity provider.

    :param app: the application the dashboard shows.
    :param request: the Starlette request (headers, cookies, client address, path).
    :param action: ``"view"`` or ``"act"``.

    Return True to allow, False to refuse (403, or no buttons), a Starlette ``Response``
    to send instead (e.g. a redirect to your login page), or None for no opinion. Every
    implementation is asked: any False wins, then the first Response; when all say None the
    request goes on. ``cogworker web`` refuses a non-loopback address unless some active
    plugin implements this hook.

    Failure policy: propagates: the request fails with 500 and is never let through.

    Implemented by builtin: none.

    Example::

        @cogworker.hookimpl
        def cogworker_web_authorize(app, request, action):
            user = request.headers.get("X-Forwarded-User")  # set by the auth proxy
            if user is None:
                return False
            return action == "view" or user in ADMINS
    """
