"""The dashboard in a WSGI host (Flask, Django), through a2wsgi.

Two ways in:

* :func:`wsgi_app` is the dashboard as a WSGI application, for a dispatcher that mounts
  it under a prefix (``werkzeug``'s ``DispatcherMiddleware``, Django's ``wsgi.py``);
* :func:`forward` calls it from inside one of the host's own views, so the host's login
  decorators (``@login_required``, ``@staff_member_required``) guard it::

      board = wsgi_app(cog_app)

      @flask_app.route("/cogworker/", defaults={"rest": ""}, methods=["GET", "POST"])
      @flask_app.route("/cogworker/<path:rest>", methods=["GET", "POST"])
      @login_required
      def dashboard(rest):
          status, headers, body = forward(board, request.environ, "/cogworker")
          return Response(body, status=status, headers=headers)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from a2wsgi import ASGIMiddleware

from cogworker.web.application import create_app

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.web.settings import WebSettings

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def wsgi_app(app: App, settings: WebSettings | None = None, **options: Any) -> WSGIApp:
    """The dashboard for ``app`` as a WSGI application (see :func:`create_app`)."""
    board = ASGIMiddleware(cast("Any", create_app(app, settings, **options)))
    return cast("WSGIApp", board)


def forward(board: WSGIApp, environ: Mapping[str, Any], prefix: str
            ) -> tuple[int, list[tuple[str, str]], bytes]:
    """Serve one request of the host at ``prefix`` (e.g. ``/cogworker``) with ``board``.

    The host's path ``<prefix>/jobs`` becomes the dashboard's ``/jobs``, and the prefix its
    mount point (links carry it). Returns (status code, headers, body).
    """
    prefix = prefix.rstrip("/")
    script_name = str(environ.get("SCRIPT_NAME", "")).rstrip("/")
    path = str(environ.get("PATH_INFO", ""))
    if not path.startswith(prefix):
        raise ValueError(f"the request path {path!r} is not under the dashboard's prefix "
                         f"{prefix!r}; route only {prefix}/... to this view")
    inner = dict(environ)
    inner["SCRIPT_NAME"] = script_name + prefix
    inner["PATH_INFO"] = path[len(prefix):] or "/"
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None
                       ) -> Callable[[bytes], None]:
        started["status"], started["headers"] = status, headers
        return lambda data: None

    chunks = board(inner, start_response)
    try:
        body = b"".join(chunks)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    return int(str(started["status"]).split(" ", 1)[0]), list(started["headers"]), body
