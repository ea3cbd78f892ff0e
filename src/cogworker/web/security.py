"""Every response's security headers, and the CSRF rule for every unsafe request.

The CSRF rule (GET, HEAD and OPTIONS always pass):

* a browser that sends ``Sec-Fetch-Site`` must say ``same-origin``, else 403;
* a client that does not send it must send the CSRF token — the ``X-CSRF-Token`` header
  or the ``_csrf`` form field — equal to the ``cogworker_csrf`` cookie, and signed with
  the dashboard's secret (so a cookie planted by a sibling site cannot forge one).

The cookie is ``HttpOnly`` and ``SameSite=Strict``, set on the first page a browser loads.
A script without a browser (curl) may send ``Sec-Fetch-Site: same-origin`` itself: CSRF is
an attack through a victim's browser, which never lets a page forge that header.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Collection
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "cogworker_csrf"
FIELD = "_csrf"
HEADER = "x-csrf-token"
STATE_KEY = "cogworker_csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_FORM_BYTES = 1 << 16
"""A form bigger than this is refused before it is read (the dashboard's are tiny)."""

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
])

SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}


def sign(secret: str, nonce: str) -> str:
    """``nonce.signature``: the token for one browser."""
    mac = hmac.new(secret.encode(), nonce.encode(), hashlib.sha256).hexdigest()[:32]
    return f"{nonce}.{mac}"


def valid_token(secret: str, token: str | None) -> bool:
    """Whether ``token`` is one this secret signed."""
    if not token or token.count(".") != 1:
        return False
    nonce = token.split(".", 1)[0]
    return hmac.compare_digest(sign(secret, nonce), token)


def _cookie_token(headers: Headers) -> str | None:
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header from someone else's site: no token
        return None
    morsel = cookie.get(COOKIE)
    return morsel.value if morsel is not None else None


async def _plain_response(send: Send, status: int, text: str) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class SecurityMiddleware:
    """Security headers on every response; the CSRF rule on every unsafe request."""

    def __init__(self, app: ASGIApp, secret: str, exempt: Collection[str] = ()) -> None:
        self.app = app
        self.secret = secret
        self.exempt = frozenset(exempt)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        cookie = _cookie_token(headers)
        fresh = None if valid_token(self.secret, cookie) else sign(self.secret,
                                                                   secrets.token_hex(16))
        scope.setdefault("state", {})[STATE_KEY] = fresh or cookie
        if scope["method"] not in SAFE_METHODS and not self._exempt(scope):
            allowed, receive = await self._check(scope, receive, headers, cookie)
            if not allowed:
                await _plain_response(send, 403, "Forbidden: this request did not come from "
                                      "a dashboard page (CSRF check). Reload the page and "
                                      "try again.")
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    out.setdefault(name, value)
                if fresh is not None:
                    out.append("set-cookie", self._cookie(scope, fresh))
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _exempt(self, scope: Scope) -> bool:
        root = scope.get("root_path", "")
        path: str = scope["path"]
        return (path[len(root):] if path.startswith(root) else path) in self.exempt

    @staticmethod
    def _cookie(scope: Scope, token: str) -> str:
        path = scope.get("root_path", "") or "/"
        secure = "; Secure" if scope.get("scheme") == "https" else ""
        return f"{COOKIE}={token}; Path={path}; HttpOnly; SameSite=Strict{secure}"

    async def _check(self, scope: Scope, receive: Receive, headers: Headers,
                     cookie: str | None) -> tuple[bool, Receive]:
        site = headers.get("sec-fetch-site")
        if site is not None:
            return site == "same-origin", receive
        if not valid_token(self.secret, cookie):
            return False, receive
        if hmac.compare_digest(headers.get(HEADER, ""), cookie or ""):
            return True, receive
        body, replay = await _buffer_body(receive)
        if body is None or "form-urlencoded" not in headers.get("content-type", ""):
            return False, replay
        sent = parse_qs(body.decode("latin-1")).get(FIELD, [""])[0]
        return hmac.compare_digest(sent, cookie or ""), replay


async def _buffer_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole request body (None when over the limit), and a receive that replays it."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None, receive
        chunks.append(chunk)
        more = message.get("more_body", False)
    body = b"".join(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, replay
