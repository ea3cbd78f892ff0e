"""CSRF, authorization through ``cogworker_web_authorize``, and where ``cogworker web`` may
listen."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from cogworker import hookimpl
from cogworker.app import App
from cogworker.web.security import sign, valid_token
from cogworker.web.server import UnsafeBindError, check_bind, is_loopback
from helpers.redis_access import client_of, keys_of
from web.conftest import LiveServer, StartServer
from web.seed import HOSTILE, Seeded
from web.seed_observed import HOSTILE_RUN_JID, Observed


def observed_of(seeded: Seeded) -> Observed:
    assert isinstance(seeded.observed, Observed)
    return seeded.observed


def token_of(http: httpx.Client) -> str:
    """Load a page as a browser would: the cookie is set and the form carries the token."""
    html = http.get("/overview").text
    match = re.search(r'name="_csrf" value="([^"]+)"', html)
    assert match is not None
    return match.group(1)


def paused(live: LiveServer) -> bool:
    return bool(client_of(live.app).sismember(keys_of(live.app).paused_queues, "mail"))


@pytest.mark.parametrize("site", ["cross-site", "same-site", "none"])
def test_a_cross_origin_post_is_refused_even_with_the_token(http: httpx.Client,
                                                            live: LiveServer, site: str) -> None:
    token = token_of(http)
    response = http.post("/queues/pause", data={"queue": "mail", "_csrf": token},
                         headers={"Sec-Fetch-Site": site})
    assert response.status_code == 403 and response.text.startswith("Forbidden")
    assert not paused(live)


def test_without_the_header_the_token_decides(http: httpx.Client, live: LiveServer) -> None:
    assert http.post("/queues/pause", data={"queue": "mail"}).status_code == 403
    token = token_of(http)
    forged = sign("another secret that is long enough to be one", "0" * 32)
    assert http.post("/queues/pause", data={"queue": "mail", "_csrf": forged}).status_code == 403
    assert not paused(live)
    assert http.post("/queues/pause", data={"queue": "mail", "_csrf": token}).status_code == 303
    assert paused(live)
    response = http.post("/queues/resume", data={"queue": "mail"},
                         headers={"X-CSRF-Token": token})
    assert response.status_code == 303 and not paused(live)


def test_a_token_without_its_cookie_is_refused(live: LiveServer, seeded: Seeded) -> None:
    with httpx.Client(base_url=live.url) as first:
        token = token_of(first)
    with httpx.Client(base_url=live.url) as stranger:  # no cookie
        response = stranger.post("/queues/pause", data={"queue": "mail", "_csrf": token})
    assert response.status_code == 403 and not paused(live)


def test_tokens_are_signed() -> None:
    secret = "s" * 40
    token = sign(secret, "abc")
    assert valid_token(secret, token)
    assert not valid_token(secret, "abc.0000") and not valid_token(secret, None)
    assert not valid_token("t" * 40, token)


def test_an_exempt_path_skips_the_check(start_server: StartServer, seeded: Seeded) -> None:
    live = start_server(seeded, csrf_exempt=["/queues/pause"])
    with httpx.Client(base_url=live.url) as http:
        assert http.post("/queues/pause", data={"queue": "mail"}).status_code == 303
        assert http.post("/queues/resume", data={"queue": "mail"}).status_code == 403
    assert paused(live)


class HeaderAuth:
    """Viewers and admins from a header an auth proxy sets; others go to a login page."""

    @hookimpl
    def cogworker_web_authorize(self, app: App, request: Request, action: str
                                ) -> bool | Response | None:
        user = request.headers.get("x-user")
        if user is None:
            return RedirectResponse("/login", 302)
        if user == "nobody":
            return False
        return action == "view" or user == "admin"


def test_the_authorize_hook_decides_who_sees_and_who_acts(web_app: App,
                                                          start_server: StartServer,
                                                          seeded: Seeded) -> None:
    web_app.hooks.plugin_manager.register(HeaderAuth(), name="header-auth")
    assert web_app.hooks.web_authorizers() == ["header-auth"]
    live = start_server(seeded)
    with httpx.Client(base_url=live.url, follow_redirects=False) as http:
        assert http.get("/jobs").headers["location"] == "/login"
        assert http.get("/jobs", headers={"x-user": "nobody"}).status_code == 403
        viewer = http.get("/jobs", headers={"x-user": "viewer"})
        assert viewer.status_code == 200 and 'method="post"' not in viewer.text
        refused = http.post("/queues/pause", data={"queue": "mail"},
                            headers={"x-user": "viewer", "Sec-Fetch-Site": "same-origin"})
        assert refused.status_code == 403 and not paused(live)
        admin = http.get("/jobs", headers={"x-user": "admin"})
        assert 'method="post"' in admin.text
        assert http.post("/queues/pause", data={"queue": "mail"},
                         headers={"x-user": "admin", "Sec-Fetch-Site": "same-origin"}
                         ).status_code == 303
        assert http.get("/static/app.css").status_code == 200  # assets need no login
        for path in ("/metrics", "/history", "/timings", "/timings/series.json?class=x"):
            assert http.get(path, headers={"x-user": "nobody"}).status_code == 403, path
            assert http.get(path, headers={"x-user": "viewer"}).status_code == 200, path
    assert paused(live)


def test_loopback_detection() -> None:
    for host in ("127.0.0.1", "127.5.0.1", "::1", "[::1]", "localhost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.10", "10.0.0.1"):
        assert not is_loopback(host), host


def test_a_public_address_needs_an_auth_plugin_or_an_explicit_flag(caplog: Any) -> None:
    check_bind("127.0.0.1", [], insecure_no_auth=False)
    check_bind("0.0.0.0", ["sso"], insecure_no_auth=False)
    with pytest.raises(UnsafeBindError, match="cogworker_web_authorize"):
        check_bind("0.0.0.0", [], insecure_no_auth=False)
    check_bind("0.0.0.0", [], insecure_no_auth=True)
    assert "no authentication" in caplog.text


# -- the History and Metrics tabs, the job detail's trail, /metrics -----------------------


def test_hostile_text_is_escaped_in_history_metrics_and_detail(http: httpx.Client,
                                                               seeded: Seeded) -> None:
    pages = [http.get(path).text for path in (
        "/history", f"/history?jid={HOSTILE_RUN_JID}", "/history?error=alert",
        "/timings", "/timings?sort=class", f"/timings?class={HOSTILE[0]}",
        f"/jobs?status=retrying&selected={observed_of(seeded).trail_jid}&in=retrying",
        f"/history?class={HOSTILE[1]}")]
    for html in pages:
        for hostile in HOSTILE:
            assert hostile not in html
        assert "<img" not in html and "<script>" not in html
    assert all("&lt;script&gt;alert(1)&lt;/script&gt;" in html for html in pages[:4])


def test_new_pages_take_no_unsafe_requests(http: httpx.Client) -> None:
    for path in ("/history", "/timings", "/metrics", "/overview/daily.json"):
        assert http.post(path, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
        assert http.post(path, headers={"Sec-Fetch-Site": "same-origin"}).status_code == 405
