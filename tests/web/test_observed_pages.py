"""History, Metrics, the runs-per-day chart, the job detail's status and attempts, and
``/metrics``: over real HTTP, against what the plugins' stores hold; and what each page
says when its plugin is off."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import replace
from html import unescape

import httpx
import pytest
import redis

from cogworker.app import App
from cogworker.web import create_app
from cogworker.web.history_view import SEARCH_CHUNK
from web.conftest import LiveServer, serve
from web.seed import CLASSES, Seeded
from web.seed_observed import Observed, history_records

ROW = re.compile(r'<tr>\s*<td class="nowrap" data-label="Finished">')


def observed(seeded: Seeded) -> Observed:
    assert isinstance(seeded.observed, Observed)
    return seeded.observed


def rows(html: str) -> int:
    return len(ROW.findall(html))


def classes_shown(html: str) -> list[str]:
    return [unescape(name) for name in re.findall(r'class="job-class" href="[^"]*"[^>]*>([^<]+)<',
                                                  html)]


def test_history_pages_by_offset_with_the_exact_total(http: httpx.Client) -> None:
    first = http.get("/history?per=25").text
    assert rows(first) == 25 and "of 602 runs" in first
    deep = http.get("/history?per=25&page=25").text
    assert rows(deep) == 2
    assert http.get("/history?per=25&page=26").status_code == 200


def test_history_filters_by_status_class_queue_and_jid(http: httpx.Client,
                                                       seeded: Seeded) -> None:
    failed = http.get("/history?status=failed&per=100").text
    assert "Succeeded</span>" not in failed.split("<tbody>")[1]
    assert "of 122 runs" in failed  # every fifth of 600, and the two hostile runs
    assert f'<option value="{CLASSES[1]}">' in failed  # the class filter's suggestions
    one_class = http.get(f"/history?class={CLASSES[1]}&per=100").text
    assert set(classes_shown(one_class)) == {CLASSES[1]}
    jid = observed(seeded).history_jids[2]
    runs = http.get(f"/history?jid={jid}").text
    assert rows(runs) == 2 and runs.count(jid) >= 2
    combined = http.get(f"/history?status=failed&queue=default&class={CLASSES[0]}").text
    assert "Next page" in combined or "End of the history." in combined
    assert set(classes_shown(combined)) <= {CLASSES[0]}


def test_history_sorts_by_duration_both_ways(http: httpx.Client) -> None:
    def durations(html: str) -> list[str]:
        return re.findall(r'data-label="Duration">([^<]+)<', html)

    slowest = durations(http.get("/history?sort=duration&order=desc&per=10").text)
    fastest = durations(http.get("/history?sort=duration&order=asc&per=10").text)
    assert slowest[0] == "4.0s" and fastest[0] == "5ms"


def test_history_time_range_keeps_recent_runs_only(http: httpx.Client) -> None:
    html = http.get("/history?range=1h&per=100").text
    assert rows(html) == 6  # now, and one each 1,000 s back: 4 runs + the 2 hostile ones


def test_error_text_search_pages_through_every_match(http: httpx.Client) -> None:
    matches: list[str] = []
    url = "/history?error=GATEWAY+did+not&per=10"
    for _ in range(60):  # each request walks at most 50 ms of failed runs
        html = http.get(url).text
        matches += re.findall(r'<summary class="error-line">([^<]+)<', html)
        more = re.search(r'href="([^"]+)">(?:Next page|Search further)', html)
        if more is None:
            break
        url = unescape(more.group(1))
    assert len(matches) == 60 and all("gateway did not answer" in m for m in matches)
    assert len(set(matches)) > 1
    assert "Nothing" not in http.get("/history?error=timeout&status=success").text


def test_a_bad_cursor_is_a_notice_not_an_error(http: httpx.Client) -> None:
    html = http.get("/history?status=failed&queue=mail&cursor=%%%").text
    assert "no longer valid" in html


def test_history_rows_link_to_the_job_and_its_runs(http: httpx.Client, seeded: Seeded) -> None:
    html = http.get("/history?per=10").text
    jid = observed(seeded).history_jids[0]
    assert f'href="/jobs?selected={jid}"' in html
    assert f'href="/history?jid={jid}"' in html


def test_metrics_table_is_sorted_and_the_series_has_percentiles(http: httpx.Client) -> None:
    html = http.get("/timings?sort=p99").text
    p99 = [float(v) for v in re.findall(r'data-label="p99">([\d.]+)ms<', html)]
    assert len(p99) == 5 and p99 == sorted(p99, reverse=True)
    by_name = classes_shown(http.get("/timings?sort=class").text)
    assert by_name == sorted(by_name)
    data = http.get(f"/timings/series.json?class={CLASSES[0]}&range=1h").json()
    assert len(data["labels"]) == 60
    assert all(p50 <= p99 for p50, p99 in zip(data["p50_ms"], data["p99_ms"], strict=True)
               if p50 is not None and p99 is not None)
    daily = http.get(f"/timings/series.json?class={CLASSES[0]}&range=24h").json()
    assert len(daily["labels"]) == 24


def test_metrics_without_javascript_shows_the_chart_as_a_table(http: httpx.Client) -> None:
    html = http.get(f"/timings?class={CLASSES[2]}").text
    fallback = html.split('class="chart-fallback')[1].split("</table>")[0]
    assert fallback.count("<tr>") >= 60  # the header and a row per minute that ran


@pytest.mark.parametrize("days", [7, 30, 90])
def test_runs_per_day_come_from_the_history(http: httpx.Client, days: int) -> None:
    data = http.get(f"/overview/daily.json?days={days}").json()
    assert data["source"] == "history" and len(data["labels"]) == days
    counted = sum(data["success"]) + sum(data["failed"])
    # 602 runs over the last 6.9 days: the 7-day window starts at midnight UTC 6 days ago
    assert counted == 602 if days > 7 else 500 < counted <= 602
    assert f"last {days} days" in http.get(f"/overview?days={days}").text


def test_job_detail_shows_status_attempts_and_history_link(http: httpx.Client,
                                                           seeded: Seeded) -> None:
    jid = observed(seeded).trail_jid
    html = http.get(f"/jobs?status=retrying&selected={jid}&in=retrying").text
    detail = html.split('id="jobs-detail"')[1]
    assert detail.count("Attempt ") == 3 and "gateway did not answer (2)" in detail
    assert "40%" in detail and "retrying</span>" in detail
    assert f'href="/history?jid={jid}"' in detail


def test_the_exporter_answers_at_the_prefix(http: httpx.Client) -> None:
    response = http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert "cogworker_processed_total 1.284551e+06" in response.text
    assert 'cogworker_job_duration_seconds_count{class="mail.SendWelcome"' in response.text
    open_metrics = http.get("/metrics", headers={"Accept": "application/openmetrics-text"})
    assert open_metrics.text.rstrip().endswith("# EOF")


@pytest.fixture
def bare(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[LiveServer]:
    """The dashboard of an app with every observability plugin off (metrics included)."""
    plain = App(redis_url=redis_url, namespace=namespace, plugins=("no:metrics",))
    url, server, thread = serve(create_app(plain))
    live = LiveServer(url, plain, None, server, thread)
    yield live
    live.stop()
    plain.close()


def test_each_page_says_which_plugin_is_off(bare: LiveServer) -> None:
    with httpx.Client(base_url=bare.url) as http:
        history = http.get("/history").text
        assert "The history plugin is off" in history
        assert "plugins = [&#34;history&#34;]" in history
        assert "The metrics plugin is off" in http.get("/timings").text
        assert http.get("/timings/series.json?class=x").status_code == 404
        detail = http.get("/jobs?selected=nothing-here").text
        assert "status plugin is off" in detail and "attempts plugin is off" in detail
        daily = http.get("/overview/daily.json?days=30").json()
        assert daily["source"] == "counters" and len(daily["labels"]) == 30
        assert "From the hourly counters" in http.get("/overview").text
        exporter = http.get("/metrics")
        assert exporter.status_code == 200 and "cogworker_processed_total" in exporter.text


def test_history_seed_is_what_the_tests_count() -> None:
    records = history_records(time.time(), 600)
    assert sum(record.status == "failed" for record in records) == 120
    assert sum("gateway" in (record.error_message or "") for record in records) == 60
    assert SEARCH_CHUNK < 600  # the error search crosses chunks in the test above


def test_a_dashboard_without_the_plugins_shows_what_workers_recorded(
        seeded: Seeded, redis_url: str, namespace: str) -> None:
    """Reading needs no plugin: a dashboard app that turns none on (the workers do) shows
    the history, metrics, trail and status they wrote."""
    plain = App(redis_url=redis_url, namespace=namespace, plugins=("no:metrics",))
    url, server, thread = serve(create_app(plain))
    live = LiveServer(url, plain, None, server, thread)
    try:
        with httpx.Client(base_url=url) as http:
            history = http.get("/history").text
            assert "plugin is off" not in history and rows(history) == 25
            assert "plugin is off" not in http.get("/timings").text
            assert http.get(f"/timings/series.json?class={CLASSES[0]}").status_code == 200
            jid = observed(seeded).trail_jid
            detail = http.get(f"/jobs?status=retrying&selected={jid}&in=retrying").text
            assert "plugin is off" not in detail and "gateway did not answer (2)" in detail
            assert http.get("/overview/daily.json?days=30").json()["source"] == "history"
    finally:
        live.stop()
        plain.close()


def test_a_broker_without_a_history_says_so(http: httpx.Client, live: LiveServer,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from cogworker.core.broker import HISTORY

    broker = live.app.broker
    extension = broker.extension
    monkeypatch.setattr(broker, "extension",
                        lambda key: None if key is HISTORY else extension(key))
    page = http.get("/history")
    assert page.status_code == 200 and "keeps no run history" in page.text
    assert http.get("/overview/daily.json?days=7").json()["source"] == "counters"


def test_history_rows_link_where_the_status_plugin_says_the_job_is(
        http: httpx.Client, live: LiveServer, seeded: Seeded) -> None:
    from cogworker.core.broker import STATUS, StatusRecord

    store = live.app.broker.extension(STATUS)
    assert store is not None
    done, retrying = observed(seeded).history_jids[0], observed(seeded).history_jids[2]
    now = time.time()
    store.write([StatusRecord(done, "complete", now, now + 600),
                 StatusRecord(retrying, "retrying", now, now + 600)])
    html = http.get("/history?per=10").text
    assert f'href="/jobs?status=retrying&amp;selected={retrying}&amp;in=retrying"' in html
    assert f'href="/jobs?selected={done}"' not in html  # finished: no detail to open
    assert f'href="/history?jid={done}"' in html  # its runs still are


def test_cursor_pages_work_for_a_long_class_name(http: httpx.Client, live: LiveServer) -> None:
    from cogworker.core.broker import HISTORY
    from web.seed_observed import RETENTION

    store = live.app.broker.extension(HISTORY)
    assert store is not None
    long_name = "reports." + "VeryLongJobClassName" * 7  # its cursor: over 200 characters
    now = time.time()
    store.append([replace(record, job_class=long_name, queue="mail", status="failed",
                          error_class="E", error_message="m", run_id=f"long-{n}")
                  for n, record in enumerate(history_records(now, 30))], RETENTION)
    url = f"/history?class={long_name}&queue=mail&per=10"
    seen = 0
    for _ in range(5):
        html = http.get(url).text
        seen += rows(html)
        more = re.search(r'href="([^"]+)">Next page', html)
        if more is None:
            break
        url = unescape(more.group(1))
    assert seen == 30 and "no longer valid" not in html
