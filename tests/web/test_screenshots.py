"""A screenshot of every tab at desktop and phone width, light and dark (under .artifacts/).

Each screenshot is also a check: the page loaded, its main table is there, nothing
overflows the viewport sideways (tables scroll inside their card), and no console error
(a Content-Security-Policy violation included) happened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from web.conftest import LiveServer, NewPage

TABS = {
    "overview": ("/", "#overview-queues"),
    "jobs": ("/jobs", "#jobs-table"),
    "jobs-detail": ("/jobs?status=retrying", "#jobs-table"),
    "schedules": ("/schedules", "#schedules-table"),
    "workers": ("/workers", "#workers-cards"),
    "locks": ("/locks", "#locks-table"),
    "history": ("/history", "#history-table"),
    "history-failed": ("/history?status=failed&sort=duration", "#history-table"),
    "metrics": ("/timings", "#metrics-table"),
}


@pytest.mark.parametrize(("width", "dark"), [(1280, False), (1280, True), (390, False),
                                             (390, True)])
def test_every_tab_renders_and_is_captured(live: LiveServer, new_page: NewPage,
                                           artifacts: Path, width: int, dark: bool) -> None:
    page = new_page(width=width, dark=dark)
    for name, (path, region) in TABS.items():
        page.goto(live.url + path)
        page.wait_for_selector(region)
        if name == "jobs-detail":
            page.click("#jobs-table tbody tr:first-child a.job-class")
            page.wait_for_selector("#jobs-detail")
        if name == "overview":
            page.wait_for_selector("#chart-throughput-canvas .uplot")
            page.wait_for_selector("#chart-daily-canvas .uplot")
        if name == "metrics":
            page.wait_for_selector("#chart-latency-canvas .uplot")
        if name == "history-failed":
            page.click("#history-table details.run-error summary")
        if name == "locks":
            page.wait_for_selector("#where-0 .tag")
        overflow: Any = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{name} overflows sideways by {overflow}px at {width}px"
        scheme = "dark" if dark else "light"
        page.screenshot(path=str(artifacts / f"{name}-{width}-{scheme}.png"), full_page=True)
