"""The dashboard over real HTTP (uvicorn on 127.0.0.1): pages, fragments, actions and their
effect in Redis, escaping, the security headers, read-only mode."""

from __future__ import annotations

import re
from html import unescape

import httpx
import pytest

from helpers.redis_access import client_of, keys_of
from web.conftest import LiveServer, StartServer
from web.seed import HOSTILE, IMG, SCRIPT, Seeded

SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}
PAGES = ["/", "/overview", "/jobs", "/jobs?status=running", "/jobs?status=enqueued&queue=mail",
         "/jobs?status=retrying", "/jobs?status=scheduled", "/jobs?status=dead",
         "/jobs?q=timeout", "/jobs?status=dead&order=oldest&page=2&per=10", "/schedules",
         "/schedules?sort=job&q=sync", "/workers", "/workers?sort=busy&q=web", "/locks",
         "/locks?locate=1", "/overview?sort=latency&q=ma", "/overview?days=90", "/history",
         "/history?status=failed&sort=duration&order=asc", "/history?class=mail.SendWelcome",
         "/history?error=timeout&range=7d", "/timings", "/timings?range=24h&sort=p99"]
FRAGMENTS = ["/overview?fragment=counters", "/overview?fragment=queues",
             "/overview?fragment=redis", "/jobs?fragment=table", "/jobs?fragment=detail",
             "/schedules?fragment=table", "/workers?fragment=cards", "/workers/summary",
             "/locks?fragment=table", "/locks/where?owner=x&kind=push",
             "/history?fragment=table", "/timings?fragment=table"]


def jid_fields(html: str) -> list[str]:
    return re.findall(r'name="jid" value="([^"]+)"', html)


@pytest.mark.parametrize("path", PAGES + FRAGMENTS)
def test_every_page_and_fragment_answers(http: httpx.Client, path: str) -> None:
    response = http.get(path)
    assert response.status_code == 200, response.text[:500]
    assert response.headers["content-type"].startswith("text/html")
    is_fragment = "fragment=" in path or path.startswith(("/workers/summary", "/locks/where"))
    assert ("<html" in response.text) is not is_fragment


def test_throughput_data_has_24_points(http: httpx.Client) -> None:
    data = http.get("/overview/throughput.json").json()
    assert len(data["labels"]) == len(data["processed"]) == len(data["failed"]) == 24
    assert sum(data["processed"]) > 0


def test_job_detail_shows_arguments_error_and_backtrace(http: httpx.Client,
                                                      seeded: Seeded) -> None:
    html = http.get(f"/jobs?status=retrying&selected={seeded.retry[1]}&in=retrying").text
    assert "Last error" in html and "gateway did not answer in 10s" in html
    assert 'File &#34;/srv/app/billing/gateway.py&#34;, line 88' in html
    assert "Reschedule" in html


def test_hostile_text_is_escaped_everywhere(http: httpx.Client, seeded: Seeded) -> None:
    pages = [http.get(path).text for path in (
        "/jobs?status=enqueued&queue=mail&order=newest", "/jobs?status=dead",
        f"/jobs?selected={seeded.hostile_jid}&in=enqueued&sq=mail",
        f"/jobs?status=dead&selected={seeded.dead[-1]}&in=dead", f"/jobs?q={SCRIPT}")]
    for html in pages:
        for hostile in HOSTILE:
            assert hostile not in html
        assert "<img" not in html
    assert any("&lt;script&gt;alert(1)&lt;/script&gt;" in html for html in pages)
    assert any(unescape("&#34;&gt;&lt;img src=x onerror=alert(1)&gt;") == IMG
               and "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html for html in pages)


def test_security_headers_on_every_response(http: httpx.Client) -> None:
    for path in ("/", "/static/app.css", "/nope"):
        response = http.get(path)
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert "unsafe-eval" not in csp and "frame-ancestors 'none'" in csp
        assert response.headers["x-content-type-options"] == "nosniff"
    page = httpx.get(str(http.base_url))  # a new visitor: no cookie yet
    assert "cogworker_csrf=" in page.headers["set-cookie"]
    assert "HttpOnly" in page.headers["set-cookie"] and "SameSite=Strict" in page.headers[
        "set-cookie"]
    assert page.headers["cache-control"] == "no-store"


def test_actions_change_redis_and_go_back(http: httpx.Client, live: LiveServer,
                                         seeded: Seeded) -> None:
    client, keys = client_of(live.app), keys_of(live.app)
    back = "/jobs?status=retrying&page=1"
    jid = jid_fields(http.get(back).text)[0]
    response = http.post("/jobs/retrying/retry", data={"jid": jid, "back": back},
                         headers=SAME_ORIGIN)
    assert response.status_code == 303
    assert response.headers["location"] == back + "&notice=retried&n=1"
    assert client.zcard(keys.retry) == 13
    assert "Moved 1 job(s) back to their queue." in http.get(response.headers["location"]).text
    again = http.post("/jobs/retrying/retry", data={"jid": jid}, headers=SAME_ORIGIN)
    assert again.headers["location"] == "/jobs?notice=gone"
    assert http.post("/queues/pause", data={"queue": "mail"},
                     headers=SAME_ORIGIN).status_code == 303
    assert client.sismember(keys.paused_queues, "mail")
    http.post("/queues/clear", data={"queue": "mail", "confirm": "wrong"}, headers=SAME_ORIGIN)
    assert client.llen(keys.queue("mail")) > 0
    http.post("/queues/clear", data={"queue": "mail", "confirm": "mail"}, headers=SAME_ORIGIN)
    assert client.llen(keys.queue("mail")) == 0
    http.post("/jobs/dead/clear", data={"confirm": "dead"}, headers=SAME_ORIGIN)
    assert client.zcard(keys.dead) == 0
    pjid = seeded.cron[2].pjid
    http.post(f"/schedules/{pjid}/enable", data={}, headers=SAME_ORIGIN)
    assert not client.sismember(keys.periodic_disabled, pjid)
    http.post("/locks/clear", data={"key": "deadbeef00"}, headers=SAME_ORIGIN)
    assert client.get(keys.unique("deadbeef00")) is None


def test_an_htmx_action_lands_on_the_fragment(http: httpx.Client) -> None:
    response = http.post("/queues/resume", data={"queue": "reports", "fragment": "queues",
                                                 "back": "/overview?sort=size"},
                         headers={**SAME_ORIGIN, "HX-Request": "true"})
    assert response.headers["location"] == "/overview?sort=size&notice=resumed&fragment=queues"
    fragment = http.get(response.headers["location"]).text
    assert fragment.startswith('\n<section class="card" id="overview-queues"') or \
        '<section class="card" id="overview-queues"' in fragment[:200]
    assert "Resumed." in fragment and "<html" not in fragment


@pytest.mark.parametrize("back", ["https://evil.example/", "//evil.example/x", "/\\evil",
                                  "javascript:alert(1)", "jobs"])
def test_back_never_leaves_the_dashboard(http: httpx.Client, back: str) -> None:
    response = http.post("/queues/pause", data={"queue": "mail", "back": back},
                         headers=SAME_ORIGIN)
    assert response.headers["location"].startswith("/overview?notice=")


def test_notices_are_keys_never_text(http: httpx.Client) -> None:
    html = http.get("/jobs?notice=<b>owned</b>&n=3").text
    assert "owned" not in html
    assert "Moved 3 job(s)" in http.get("/jobs?notice=retried&n=3").text


def test_read_only_hides_and_refuses_every_action(start_server: StartServer,
                                                  seeded: Seeded) -> None:
    live = start_server(seeded, read_only=True)
    with httpx.Client(base_url=live.url) as http:
        for path in PAGES:
            html = http.get(path).text
            assert 'method="post"' not in html, path
        response = http.post("/queues/pause", data={"queue": "mail"}, headers=SAME_ORIGIN)
        assert response.status_code == 403 and "read-only" in response.text
    assert not client_of(live.app).sismember(keys_of(live.app).paused_queues, "mail")


def test_unknown_paths_are_404(http: httpx.Client) -> None:
    assert http.get("/nope").status_code == 404
    assert http.post("/jobs/nonsense/retry", data={}, headers=SAME_ORIGIN).headers[
        "location"] == "/jobs?notice=gone"
