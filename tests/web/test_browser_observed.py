"""History, Metrics, the runs-per-day chart and the job detail's attempts in a real headless
Chromium, with and without JavaScript."""

from __future__ import annotations

import re
from typing import Any

import pytest

from web.conftest import LiveServer, NewPage
from web.seed import CLASSES
from web.seed_observed import HOSTILE_RUN_JID, Observed
from web.test_browser import no_dialogs

pytestmark = pytest.mark.slow
JS = pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])


def follow(page: Any, selector: str, wanted: str) -> None:
    """Click ``selector`` and wait until the address holds ``wanted`` (a full page load
    without JavaScript; htmx's boosted swap, which pushes the address, with it)."""
    page.click(selector)
    page.wait_for_url(lambda url: wanted in url)
    page.wait_for_load_state()


def observed(live: LiveServer) -> Observed:
    assert live.seeded is not None and isinstance(live.seeded.observed, Observed)
    return live.seeded.observed


@JS
def test_filter_sort_and_page_the_history(live: LiveServer, new_page: NewPage,
                                          javascript: bool) -> None:
    page = new_page(javascript=javascript)
    page.goto(live.url + "/history")
    page.wait_for_selector("#history-table tbody tr")
    page.select_option("select[name=status]", "failed")
    page.fill("input[name=class]", CLASSES[1])
    follow(page, "form.filters button[type=submit]", "status=failed")
    page.wait_for_selector("#history-table tbody tr")
    tags = page.locator("#history-table tbody td[data-label=Status] .tag").all_inner_texts()
    assert tags and set(tags) == {"Failed"}
    assert set(page.locator("#history-table a.job-class").all_inner_texts()) == {CLASSES[1]}
    page.goto(live.url + "/history?per=10")
    follow(page, "#history-table thead a:has-text('Duration')", "sort=duration")
    assert page.locator("#history-table td[data-label=Duration]").first.inner_text() == "4.0s"
    follow(page, "#history-table nav.pager a:has-text('2')", "page=2")
    assert page.locator("#history-table .pager .current").inner_text() == "2"
    assert page.locator("#history-table tbody tr").count() == 10


def test_a_failed_run_opens_its_error_and_backtrace(live: LiveServer,
                                                    new_page: NewPage) -> None:
    page = new_page(javascript=False)
    opened = no_dialogs(page)
    page.goto(live.url + f"/history?jid={HOSTILE_RUN_JID}")
    page.click("#history-table details.run-error summary")
    text = page.locator("#history-table details.run-error pre").first.inner_text()
    assert "<script>alert(1)</script>" in text
    assert page.locator("img").count() == 0 and opened == []


@JS
def test_metrics_table_and_latency_chart(live: LiveServer, new_page: NewPage,
                                         javascript: bool) -> None:
    page = new_page(javascript=javascript)
    opened = no_dialogs(page)
    page.goto(live.url + "/timings")
    page.wait_for_selector("#metrics-table tbody tr")
    assert page.locator("#metrics-table tbody tr").count() == 5
    if javascript:
        page.wait_for_selector("#chart-latency-canvas .uplot")
        assert not page.locator(".chart-fallback").first.is_visible()
    else:
        assert page.locator(".chart-fallback table tbody tr").count() >= 59
        assert not page.locator("#chart-latency-canvas").is_visible()
    follow(page, "nav[aria-label=Window] a:has-text('Last 24 hours')", "range=24h")
    if javascript:
        page.wait_for_selector("#chart-latency-canvas .uplot")
        assert "range=24h" in (page.get_attribute("#chart-latency-canvas", "data-cw-chart")
                               or "")
    page.select_option("select[name=class]", CLASSES[2])
    follow(page, "form.inline-form button", "class=")
    assert CLASSES[2] in page.locator("#latency-title").inner_text()
    follow(page, "#metrics-table thead a:has-text('p99')", "sort=p99")
    shown = page.locator("#metrics-table td[data-label=p99]").all_inner_texts()
    values = [float(re.sub(r"[^\d.]", "", text)) * (1000 if text.endswith("s") and
                                                   not text.endswith("ms") else 1)
              for text in shown]
    assert values == sorted(values, reverse=True)
    assert opened == []


@JS
def test_switch_the_runs_per_day_period(live: LiveServer, new_page: NewPage,
                                        javascript: bool) -> None:
    page = new_page(javascript=javascript)
    page.goto(live.url + "/")
    follow(page, "nav[aria-label=Period] a:has-text('30 days')", "days=30")
    assert page.locator("#chart-daily").inner_text() == "Runs per day, last 30 days"
    if javascript:
        page.wait_for_selector("#chart-daily-canvas .uplot")
        assert "days=30" in (page.get_attribute("#chart-daily-canvas", "data-cw-chart") or "")
    else:
        rows = page.locator("#chart-daily-canvas + .chart-fallback tbody tr").count()
        assert 7 <= rows <= 8  # one row per day that has runs: 602 runs over 6.9 days


@JS
def test_open_a_job_detail_with_its_attempts(live: LiveServer, new_page: NewPage,
                                             javascript: bool) -> None:
    jid = observed(live).trail_jid
    page = new_page(javascript=javascript)
    page.goto(live.url + "/jobs?status=retrying&per=100")
    page.click(f"#jobs-table tr:has-text('{jid}') a.job-class")
    page.wait_for_selector("#jobs-detail ol.attempts")
    assert page.locator("#jobs-detail ol.attempts li").count() == 3
    assert "40%" in page.locator("#jobs-detail .live-status").inner_text()
    follow(page, "#jobs-detail a:has-text('Every run of this job in History')",
           f"/history?jid={jid}")
    assert page.input_value("input[name=jid]") == jid  # the History tab, filtered by it


def test_hostile_runs_and_classes_never_run_script(live: LiveServer, new_page: NewPage) -> None:
    page = new_page()
    opened = no_dialogs(page)
    for path, region in ((f"/history?jid={HOSTILE_RUN_JID}", "#history-table"),
                         ("/history?error=alert", "#history-table"),
                         ("/timings?class=%3Cscript%3Ealert(1)%3C/script%3E", "#metrics-table"),
                         (f"/jobs?status=retrying&selected={observed(live).trail_jid}"
                          "&in=retrying", "#jobs-detail")):
        page.goto(live.url + path)
        page.wait_for_selector(region)
        assert page.locator("img").count() == 0
        assert page.locator("script:not([src])").count() == 0
    assert "<script>alert(1)</script>" in page.locator("#jobs-detail ol.attempts").inner_text()
    assert opened == []
