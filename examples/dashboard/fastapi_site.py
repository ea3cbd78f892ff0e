"""The dashboard under ``/cogworker`` in a FastAPI app, behind the app's own login.

Run it with ``uvicorn examples.dashboard.fastapi_site:site``. The login check here is a
stand-in (an ``X-User`` header set by your auth proxy): put your real one in ``require_login``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from starlette.responses import PlainTextResponse

import cogworker
from cogworker.web import create_app

jobs = cogworker.App()  # your app; its settings say where Redis is
site = FastAPI()
dashboard = create_app(jobs)
ADMINS = {"ada"}


@site.middleware("http")
async def require_login(request: Request,
                        call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Only signed-in administrators reach ``/cogworker``."""
    if request.url.path.startswith("/cogworker") and request.headers.get("x-user") not in ADMINS:
        return PlainTextResponse("Please sign in", status_code=401)
    return await call_next(request)


site.mount("/cogworker", dashboard)


@site.get("/")
def home() -> dict[str, str]:
    return {"dashboard": "/cogworker/"}
