"""The dashboard in a real headless Chromium: actions with and without JavaScript, their
effect in Redis, Live refresh, local times, and CSRF and XSS as a browser meets them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from cogworker.app import App
from cogworker.core.payload import dumps, new_jid
from helpers.redis_access import client_of, keys_of
from web.conftest import LiveServer, NewPage, serve

pytestmark = pytest.mark.slow


@contextmanager
def signals(app: App, identity: str) -> Iterator[list[bytes]]:
    """Collect what is published on a process's control channel."""
    pubsub = client_of(app).pubsub()  # type: ignore[no-untyped-call, unused-ignore]
    pubsub.subscribe(keys_of(app).signal(identity))
    while pubsub.get_message(timeout=1.0) is None:
        pass  # wait for the subscribe confirmation
    received: list[bytes] = []
    try:
        yield received
    finally:
        deadline = time.monotonic() + 5
        while not received and time.monotonic() < deadline:
            message = pubsub.get_message(timeout=0.2)
            if message and message["type"] == "message":
                received.append(message["data"])
        pubsub.close()


def no_dialogs(page: Any) -> list[str]:
    """Record (and dismiss) every alert a page opens."""
    opened: list[str] = []

    def record(dialog: Any) -> None:
        opened.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    return opened


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_retry_and_delete_from_the_jobs_table(live: LiveServer, new_page: NewPage,
                                              javascript: bool) -> None:
    client, keys = client_of(live.app), keys_of(live.app)
    page = new_page(javascript=javascript)
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(live.url + "/jobs?status=retrying")
    if javascript:
        page.evaluate("window.cwMarker = 'same page'")
    page.click("#jobs-table tbody tr:first-child button:has-text('Retry')")
    page.wait_for_selector("#jobs-table .notice:has-text('Moved 1 job')")
    assert client.zcard(keys.retry) == 13
    if javascript:  # swapped in place: no navigation happened
        assert page.evaluate("window.cwMarker") == "same page"
    page.goto(live.url + "/jobs?status=dead")
    before = client.zcard(keys.dead)
    page.click("#jobs-table tbody tr:first-child button:has-text('Delete')")
    page.wait_for_selector("#jobs-table .notice:has-text('Deleted the job')")
    assert client.zcard(keys.dead) == before - 1


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_pause_a_queue_and_quiet_a_worker(live: LiveServer, new_page: NewPage,
                                          javascript: bool) -> None:
    client, keys = client_of(live.app), keys_of(live.app)
    page = new_page(javascript=javascript)
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(live.url + "/overview")
    row = page.locator("#overview-queues tr", has=page.locator("a:text-is('mail')"))
    row.locator("button:has-text('Pause')").click()
    page.wait_for_selector("#overview-queues .notice:has-text('Paused the queue')")
    assert client.sismember(keys.paused_queues, "mail")
    assert live.seeded is not None
    identity = live.seeded.processes[0]
    page.goto(live.url + "/workers")
    card = page.locator("section.card", has=page.locator(f"text={identity}"))
    with signals(live.app, identity) as received:
        card.locator("button:has-text('Quiet')").click()
        page.wait_for_selector("#workers-cards .notice:has-text('stop taking new jobs')")
    assert received == [b"quiet"]


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_run_a_schedule_now_and_clear_with_typed_confirmation(live: LiveServer,
                                                              new_page: NewPage,
                                                              javascript: bool) -> None:
    client, keys = client_of(live.app), keys_of(live.app)
    page = new_page(javascript=javascript)
    page.goto(live.url + "/schedules?sort=job")
    before = client.llen(keys.queue("default"))
    row = page.locator("#schedules-table tr", has=page.locator("text=sync.PullInventory"))
    row.locator("button:has-text('Run now')").click()
    page.wait_for_selector("#schedules-table .notice:has-text('Pushed the job once')")
    assert client.llen(keys.queue("default")) == before + 1
    page.goto(live.url + "/jobs?status=scheduled")
    page.click("#jobs-table summary:has-text('Delete all')")
    page.fill("#jobs-table input[name=confirm]", "scheduled")
    page.click("#jobs-table .confirm-box button:has-text('Delete')")
    page.wait_for_selector("#jobs-table .notice:has-text('Deleted 16 job(s)')")
    assert client.zcard(keys.schedule) == 0


def test_reschedule_from_the_detail_panel(live: LiveServer, new_page: NewPage) -> None:
    assert live.seeded is not None
    jid = live.seeded.retry[0]
    page = new_page()
    page.goto(live.url + f"/jobs?status=retrying&selected={jid}&in=retrying")
    page.fill("#jobs-detail input[name=minutes]", "120")
    started = time.time()
    page.click("#jobs-detail button:has-text('Reschedule')")
    page.wait_for_selector("#jobs-detail .notice:has-text('Rescheduled')")
    entry = next(raw for raw, _ in client_of(live.app).zscan_iter(keys_of(live.app).retry)
                 if jid.encode() in raw)
    score = client_of(live.app).zscore(keys_of(live.app).retry, entry)
    assert score is not None and started + 7190 < score < time.time() + 7210


def test_live_refresh_shows_new_jobs_and_can_be_turned_off(live: LiveServer,
                                                           new_page: NewPage) -> None:
    page = new_page()
    page.goto(live.url + "/overview")
    client_of(live.app).lpush(keys_of(live.app).queue("critical"), dumps(
        {"class": "Urgent", "args": [], "queue": "critical", "jid": new_jid(),
         "created_at": time.time(), "enqueued_at": time.time()}))
    critical = page.locator("#overview-queues tr", has=page.locator("a:text-is('critical')"))
    critical.locator("td.num:text-is('1')").wait_for(timeout=15_000)
    live_button = page.locator("[data-cw-live]")
    assert live_button.get_attribute("aria-pressed") == "true"
    live_button.click()
    assert live_button.get_attribute("aria-pressed") == "false"
    assert page.evaluate("localStorage.getItem('cw-live')") == "off"


def test_times_are_shown_in_the_browsers_time_zone(live: LiveServer, browser: Any) -> None:
    context = browser.new_context(timezone_id="Asia/Tokyo")
    try:
        page = context.new_page()
        page.goto(live.url + "/jobs?status=dead")
        element = page.locator("time[data-cw-time]").first
        stamp = element.get_attribute("datetime")
        assert stamp is not None and stamp.endswith("Z")
        expected = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(
            ZoneInfo("Asia/Tokyo")).strftime("%Y-%m-%d %H:%M:%S")
        assert element.inner_text() == expected
        assert page.evaluate("window.COGWORKER_TIME_FORMAT") == "%Y-%m-%d %H:%M:%S"
    finally:
        context.close()


def test_hostile_jobs_never_run_script(live: LiveServer, new_page: NewPage) -> None:
    assert live.seeded is not None
    page = new_page()
    opened = no_dialogs(page)
    for path in ("/jobs?status=enqueued&queue=mail", "/jobs?status=dead",
                 f"/jobs?status=dead&selected={live.seeded.dead[-1]}&in=dead",
                 f"/jobs?selected={live.seeded.hostile_jid}&in=enqueued&sq=mail"):
        page.goto(live.url + path)
        page.wait_for_selector("#jobs-table")
        assert page.locator("img").count() == 0
        assert page.locator("script:not([src])").count() == 0
    assert page.locator("#jobs-detail pre.code").first.inner_text().count("<script>") >= 1
    assert opened == []


ATTACK = """<!doctype html><html><body>
<form id="f" method="post" action="{target}/queues/pause">
<input name="queue" value="mail"></form>
<script>document.getElementById("f").submit();</script></body></html>"""


def test_a_form_on_another_site_cannot_act(live: LiveServer, browser: Any) -> None:
    """The visitor has the dashboard open (its cookie set); another origin's page posts a
    form to it. The browser says ``Sec-Fetch-Site: same-site``: refused."""
    attacker = Starlette(routes=[Route("/", lambda request: HTMLResponse(
        ATTACK.format(target=live.url)))])
    url, server, thread = serve(attacker)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(live.url + "/overview")
        with page.expect_response(lambda r: r.url.endswith("/queues/pause")) as answer:
            page.goto(url + "/")
        assert answer.value.status == 403
    finally:
        context.close()
        server.should_exit = True
        thread.join(10)
    assert not client_of(live.app).sismember(keys_of(live.app).paused_queues, "mail")
