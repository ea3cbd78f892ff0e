"""Who may see the dashboard and who may act: the ``cogworker_web_authorize`` hook and the
read-only setting, applied to every request but static assets."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from cogworker.web.extension import Dashboard
from cogworker.web.security import SAFE_METHODS

STATIC_PREFIX = "/static/"


def _route_path(scope: Scope) -> str:
    root = scope.get("root_path", "")
    path: str = scope["path"]
    return path[len(root):] if root and path.startswith(root) else path


class AccessMiddleware:
    """Asks the authorize hook; refuses every unsafe request in read-only mode; records in
    ``request.state.can_act`` whether this visitor may act (pages hide actions if not)."""

    def __init__(self, app: ASGIApp, board: Dashboard) -> None:
        self.app = app
        self.board = board

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _route_path(scope).startswith(STATIC_PREFIX):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        acting = scope["method"] not in SAFE_METHODS
        refusal = await run_in_threadpool(self._refusal, request, acting)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, request: Request, acting: bool) -> Response | None:
        hooks = self.board.app.hooks
        verdict = hooks.web_authorize(self.board.app, request, "act" if acting else "view")
        if isinstance(verdict, Response):
            return verdict
        if verdict is False:
            return PlainTextResponse("Forbidden: you may not " + (
                "change anything here." if acting else "see this dashboard."), 403)
        read_only = self.board.settings.read_only
        if acting and read_only:
            return PlainTextResponse("Forbidden: this dashboard is read-only.", 403)
        if acting:
            can_act = True
        else:
            can_act = not read_only and hooks.web_authorize(
                self.board.app, request, "act") in (True, None)
        request.scope.setdefault("state", {})["can_act"] = can_act
        return None
