"""Take the dashboard screenshots shown in the docs (``docs/images/dashboard-*.png``).

Seeds a private Redis with the demo fleet the browser tests use (``tests/web/seed.py``,
and what the history, metrics, status and attempts plugins record: ``seed_observed.py``),
serves the dashboard on 127.0.0.1 and captures each tab with Debian's chromium through
Playwright, at 1280 px (light and dark) and at a 390 px phone width.

Usage::

    python scripts/dashboard_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from playwright.sync_api import sync_playwright  # noqa: E402

from cogworker.app import App  # noqa: E402
from cogworker.redis.server import RedisServer  # noqa: E402
from cogworker.web import create_app  # noqa: E402
from web.conftest import CHROMIUM, CHROMIUM_ARGS, OBSERVING, serve  # noqa: E402
from web.seed import seed  # noqa: E402
from web.seed_observed import seed_observed  # noqa: E402

OUT = ROOT / "docs" / "images"
SHOTS = [  # (file name, path, width, dark, height)
    ("dashboard-overview", "/", 1280, False, 860),
    ("dashboard-jobs", "/jobs?status=retrying", 1280, False, 860),
    ("dashboard-job-detail", "/jobs?status=retrying", 1280, True, 860),
    ("dashboard-workers", "/workers", 1280, True, 760),
    ("dashboard-schedules", "/schedules", 1280, False, 420),
    ("dashboard-locks", "/locks", 1280, False, 460),
    ("dashboard-history", "/history?status=failed", 1280, False, 900),
    ("dashboard-metrics", "/timings", 1280, True, 900),
    ("dashboard-phone", "/", 390, False, 844),
    ("dashboard-phone-jobs", "/jobs?status=retrying", 390, True, 844),
]


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work, RedisServer(
            Path(work), appendonly=False, extra_args=("--save", "")) as server:
        app = App(redis_url=server.url, namespace="demo", plugins=OBSERVING)
        now = time.time()
        seed_observed(app, seed(app, now), now)
        url, uvi, thread = serve(create_app(app))
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                                     args=CHROMIUM_ARGS)
                for name, path, width, dark, height in SHOTS:
                    context = browser.new_context(
                        viewport={"width": width, "height": height},
                        color_scheme="dark" if dark else "light")
                    page = context.new_page()
                    page.goto(url + path)
                    if name == "dashboard-job-detail":
                        page.click("#jobs-table tbody tr:first-child a.job-class")
                        page.wait_for_selector("#jobs-detail")
                    if path == "/":
                        page.wait_for_selector("#chart-daily-canvas .uplot")
                    if path == "/timings":
                        page.wait_for_selector("#chart-latency-canvas .uplot")
                    if name == "dashboard-history":
                        page.click("#history-table details.run-error summary")
                    if path == "/locks":
                        page.wait_for_selector("#where-0 .tag")
                    page.screenshot(path=str(OUT / f"{name}.png"))
                    context.close()
                browser.close()
        finally:
            uvi.should_exit = True
            thread.join(10)
            app.close()
    print(f"wrote {len(SHOTS)} screenshots to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
