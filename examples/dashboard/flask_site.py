"""The dashboard under ``/cogworker`` in a Flask app, behind a Flask login decorator.

The dashboard is a WSGI app (through a2wsgi) called from a Flask view, so whatever guards
your views guards it. Run it with ``flask --app examples.dashboard.flask_site:site run``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, request

import cogworker
from cogworker.web.wsgi import forward, wsgi_app

jobs = cogworker.App()  # your app; its settings say where Redis is
site = Flask(__name__)
board = wsgi_app(jobs)
ADMINS = {"ada"}


def login_required(view: Callable[..., Any]) -> Callable[..., Any]:
    """A stand-in for flask-login's decorator: an ``X-User`` header set by your auth proxy."""

    @functools.wraps(view)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if request.headers.get("X-User") not in ADMINS:
            return Response("Please sign in", status=401)
        return view(*args, **kwargs)

    return guarded


@site.route("/cogworker/", defaults={"rest": ""}, methods=["GET", "POST"])
@site.route("/cogworker/<path:rest>", methods=["GET", "POST"])
@login_required
def dashboard(rest: str) -> Response:
    status, headers, body = forward(board, request.environ, "/cogworker")
    return Response(body, status=status, headers=headers)
