"""The dashboard under ``/cogworker/`` in a Django project, for staff members only.

A Django view forwards to the dashboard (a WSGI app through a2wsgi), so Django's own
authentication guards it. In a real project the two pieces go into ``views.py`` and
``urls.py``; here they sit in one module with a minimal configuration, so the test can run it.
"""

from __future__ import annotations

from typing import Any

import django
from django.conf import settings

if not settings.configured:  # a minimal project: your settings.py already has all this
    settings.configure(
        DEBUG=False, SECRET_KEY="example-only", ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        ROOT_URLCONF=__name__,
        MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
    )
    django.setup()

from django.http import HttpRequest, HttpResponse
from django.urls import re_path
from django.views.decorators.csrf import csrf_exempt

import cogworker
from cogworker.web.wsgi import forward, wsgi_app

jobs = cogworker.App()  # your app; its settings say where Redis is
board = wsgi_app(jobs)
STAFF = {"ada"}


def staff_only(request: HttpRequest) -> bool:
    """A stand-in for ``request.user.is_staff`` (an ``X-User`` header from your proxy)."""
    return request.headers.get("X-User") in STAFF


@csrf_exempt  # the dashboard checks CSRF itself (Sec-Fetch-Site and its own token)
def dashboard(request: HttpRequest, rest: str = "") -> HttpResponse:
    if not staff_only(request):
        return HttpResponse("Please sign in", status=401)
    status, headers, body = forward(board, request.environ, "/cogworker")
    response = HttpResponse(body, status=status)
    for name, value in headers:
        response.headers[name] = value
    return response


urlpatterns: list[Any] = [re_path(r"^cogworker(?:/(?P<rest>.*))?$", dashboard)]


def application() -> Any:
    """The project's WSGI application (what ``wsgi.py`` exposes)."""
    from django.core.wsgi import get_wsgi_application

    return get_wsgi_application()
