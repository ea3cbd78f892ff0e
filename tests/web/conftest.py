"""Fixtures for the dashboard tests: a seeded app, the dashboard served by a real uvicorn on
127.0.0.1, an HTTP client, and one headless Chromium for the whole session.

The browser is Debian's ``chromium`` driven by Playwright (no browser download). Without it
the browser tests are skipped, except under ``CI=true``, where they fail: CI installs it
with ``scripts/install-chromium``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import uvicorn

from cogworker.app import App
from cogworker.redis.server_process import free_port
from cogworker.web import create_app
from web.seed import Seeded, seed
from web.seed_observed import seed_observed

CHROMIUM = os.environ.get("COGWORKER_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
OBSERVING = ("history", "status", "attempts")
"""The plugins (off by default) the dashboard tests turn on; metrics is on by default."""
ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts" / "web"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@dataclass
class LiveServer:
    """The dashboard served on 127.0.0.1; ``url`` includes the mount prefix (none here)."""

    url: str
    app: App
    seeded: Seeded | None
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(asgi: Any, host: str = "127.0.0.1") -> tuple[str, uvicorn.Server, threading.Thread]:
    """Run ``asgi`` with uvicorn on a free loopback port until stopped; waits until it
    listens (an event, not a sleep)."""
    port = free_port()
    config = uvicorn.Config(asgi, host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="dashboard", daemon=True)
    thread.start()
    ready = threading.Event()
    while not ready.wait(0.01):
        if server.started:
            ready.set()
        elif not thread.is_alive():
            raise RuntimeError("the dashboard server did not start")
    return f"http://{host}:{port}", server, thread


@pytest.fixture
def web_app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[App]:
    """An App on this test's namespace (deleted afterwards through ``redis_client``)."""
    application = App(redis_url=redis_url, namespace=namespace, plugins=OBSERVING)
    yield application
    application.close()


@pytest.fixture
def seeded(web_app: App) -> Seeded:
    now = time.time()
    out = seed(web_app, now)
    out.observed = seed_observed(web_app, out, now)
    return out


StartServer = Callable[..., LiveServer]


@pytest.fixture
def start_server(web_app: App) -> Iterator[StartServer]:
    """``start_server(**WebSettings options)``: the dashboard for ``web_app`` on a free port."""
    started: list[LiveServer] = []

    def start(seeded: Seeded | None = None, **options: Any) -> LiveServer:
        url, server, thread = serve(create_app(web_app, **options))
        live = LiveServer(url, web_app, seeded, server, thread)
        started.append(live)
        return live

    yield start
    for live in started:
        live.stop()


@pytest.fixture
def live(start_server: StartServer, seeded: Seeded) -> LiveServer:
    return start_server(seeded)


@pytest.fixture
def http(live: LiveServer) -> Iterator[httpx.Client]:
    """A client of the live dashboard that does not follow redirects."""
    with httpx.Client(base_url=live.url, follow_redirects=False, timeout=20) as client:
        yield client


# -- the browser ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session (Playwright gives it a fresh profile)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        if in_ci():
            pytest.fail(f"CI=true but Playwright is missing: {exc}", pytrace=False)
        pytest.skip(f"playwright is not installed: {exc}")
    if not Path(CHROMIUM).exists():
        if in_ci():
            pytest.fail(f"CI=true but {CHROMIUM} is missing (scripts/install-chromium)",
                        pytrace=False)
        pytest.skip(f"no Chromium at {CHROMIUM}")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                              headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


NewPage = Callable[..., Any]


@pytest.fixture
def new_page(browser: Any) -> Iterator[NewPage]:
    """``new_page(javascript=True, width=1280, dark=False)``: a page in a fresh context;
    a console error or a page error (a CSP violation included) fails the test."""
    contexts: list[Any] = []
    problems: list[str] = []

    def make(javascript: bool = True, width: int = 1280, dark: bool = False) -> Any:
        context = browser.new_context(
            java_script_enabled=javascript, viewport={"width": width, "height": 900},
            color_scheme="dark" if dark else "light", device_scale_factor=1)
        contexts.append(context)
        page = context.new_page()
        page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        return page

    yield make
    for context in contexts:
        context.close()
    assert problems == []


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
