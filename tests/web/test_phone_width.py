"""Every tab at a 390 px phone width: nothing is cut off sideways, the navigation fits (with
JavaScript and without it), and what can be tapped is touch-sized.

"Cut off" is measured on every element of the page: it must lie inside the viewport and
inside every ancestor that clips it (``overflow-x`` other than ``visible``). The only
exemptions are scroll containers meant for wide content (a backtrace in ``pre.code``, the
no-JavaScript chart table): those scroll inside themselves and must fit the screen.
A table scrolled sideways inside its card, or a tab hidden past the edge of a scrolling
navigation bar, fails. Wider screens are held to the same rule.
"""

from __future__ import annotations

from typing import Any

import pytest

from web.conftest import LiveServer, NewPage

pytestmark = pytest.mark.slow

PHONE = 390
SCROLLERS_MEANT_FOR_IT = "pre.code, .chart-fallback"
TOUCH_TARGETS = (".btn, .tool-btn, .tab, .pager a, .pager span.current, .segmented a, "
                 ".per-page a, .per-page strong, table.data thead th a, "
                 "input[type=search], input[type=text], input[type=number], select")
SMALLEST_TOUCH_TARGET = 40  # CSS px; WCAG 2.5.8 asks 24, phone guidelines 44-48

CUT_OFF = """(allowed) => {
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + (el.classList.length ? "." + [...el.classList].join(".") : "")
    + " '" + (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 40) + "'";
  const viewport = document.documentElement.clientWidth;
  const problems = [];
  for (const el of document.body.querySelectorAll("*")) {
    if (el.parentElement.closest(allowed)) continue;
    const folded = el.closest("details:not([open])");
    if (folded && !el.closest("summary")) continue;  // hidden until its summary is opened
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (getComputedStyle(el).visibility === "hidden") continue;
    let left = 0, right = viewport;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX === "visible") continue;
      const clip = a.getBoundingClientRect();
      left = Math.max(left, clip.left + a.clientLeft);
      right = Math.min(right, clip.left + a.clientLeft + a.clientWidth);
    }
    if (box.left < left - 1 || box.right > right + 1) {
      problems.push(describe(el) + " spans " + Math.round(box.left) + ".."
        + Math.round(box.right) + " px, visible " + Math.round(left) + ".." + Math.round(right));
    }
  }
  return problems;
}"""

TOO_SMALL = """([selector, smallest]) => [...document.querySelectorAll(selector)]
  .filter((el) => el.getClientRects().length && getComputedStyle(el).visibility !== "hidden")
  .filter((el) => el.getBoundingClientRect().height < smallest)
  .map((el) => el.tagName.toLowerCase() + "." + [...el.classList].join(".") + " '"
    + (el.textContent || el.getAttribute("aria-label") || "").trim().slice(0, 30) + "' is "
    + Math.round(el.getBoundingClientRect().height) + " px tall")"""


def tabs(live: LiveServer) -> dict[str, str]:
    assert live.seeded is not None
    return {
        "overview": "/",
        "jobs": "/jobs",
        "jobs-retrying": "/jobs?status=retrying",
        "job-detail": f"/jobs?status=retrying&selected={live.seeded.retry[0]}&in=retrying",
        "schedules": "/schedules",
        "workers": "/workers",
        "locks": "/locks",
        "history": "/history",
        "history-failed": "/history?status=failed&sort=duration",
        "metrics": "/timings",
        "metrics-day": "/timings?range=24h&sort=p99",
    }


def load(page: Any, url: str, javascript: bool = True) -> None:
    """Open ``url`` and wait for what fills in after the load (charts, lock owners)."""
    page.goto(url)
    page.wait_for_selector("main .card")
    if javascript:
        for index in range(page.locator("[data-cw-chart]").count()):
            page.locator("[data-cw-chart]").nth(index).locator(".uplot").wait_for()
    if javascript and page.locator("#where-0").count():
        page.wait_for_selector("#where-0 .tag")


def cut_off(page: Any) -> list[str]:
    problems: list[str] = page.evaluate(CUT_OFF, SCROLLERS_MEANT_FOR_IT)
    return problems


def too_small(page: Any) -> list[str]:
    problems: list[str] = page.evaluate(TOO_SMALL, [TOUCH_TARGETS, SMALLEST_TOUCH_TARGET])
    return problems


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_every_tab_fits_a_phone(live: LiveServer, new_page: NewPage, dark: bool) -> None:
    page = new_page(width=PHONE, dark=dark)
    for name, path in tabs(live).items():
        load(page, live.url + path)
        assert cut_off(page) == [], f"{name} at {PHONE}px"
        assert too_small(page) == [], f"{name} at {PHONE}px"
        tables = page.locator("main table.data:visible")
        assert tables.count() >= 1, name
        rows = page.locator("main table.data:visible tbody tr")
        for index in range(rows.count()):  # every row's last cell (its actions) is on screen
            last = rows.nth(index).locator("td:visible").last
            assert last.is_visible() and last.bounding_box()["width"] > 0, name


def test_every_tab_fits_wider_screens(live: LiveServer, new_page: NewPage) -> None:
    """A tablet, a small laptop (below the 1180 px where tables turn into cards) and a
    desktop, in one page resized between them."""
    page = new_page(width=1280)
    for width in (820, 1100, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        for name, path in tabs(live).items():
            load(page, live.url + path)
            assert cut_off(page) == [], f"{name} at {width}px"


def test_confirmations_open_on_screen(live: LiveServer, new_page: NewPage) -> None:
    """The typed confirmations (clear a queue, delete all) open inside the screen, from a
    row's actions and from a card's footer."""
    page = new_page(width=PHONE)
    load(page, live.url + "/")
    page.locator("#overview-queues tbody tr").first.locator("summary").click()
    assert page.locator("#overview-queues input[name=confirm]").first.is_visible()
    assert cut_off(page) == []
    load(page, live.url + "/jobs?status=dead")
    page.click("#jobs-table summary:has-text('Delete all')")
    assert page.locator("#jobs-table input[name=confirm]").is_visible()
    assert cut_off(page) == []


def test_the_navigation_fits_and_works_without_javascript(live: LiveServer,
                                                          new_page: NewPage) -> None:
    page = new_page(javascript=False, width=PHONE)
    load(page, live.url + "/", javascript=False)
    assert cut_off(page) == []
    labels = page.locator("nav.tabs a.tab").all_inner_texts()
    assert labels[:7] == ["Overview", "Jobs", "Schedules", "Workers", "History", "Locks",
                          "Metrics"]
    for label in labels:
        page.locator("nav.tabs a.tab", has_text=label).click()
        current = page.locator("nav.tabs a.tab[aria-current=page]")
        current.wait_for()
        assert current.inner_text() == label
        assert cut_off(page) == [], f"{label} without JavaScript"
        assert too_small(page) == [], f"{label} without JavaScript"
