"""The dashboard mounted under a prefix: in Starlette/FastAPI directly, in Flask and Django
through a2wsgi, each behind the host's own login (the examples in ``examples/dashboard``)."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
import redis
from starlette.applications import Starlette
from starlette.routing import Mount

from cogworker.app import App
from cogworker.web import create_app
from helpers.redis_access import client_of, keys_of
from web.conftest import serve
from web.seed import seed

ROOT = Path(__file__).resolve().parents[2]
ADMIN = {"X-User": "ada"}


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch, redis_url: str, namespace: str,
            redis_client: redis.Redis) -> Iterator[object]:
    """``example(name)``: a fresh import of ``examples.dashboard.<name>`` whose App uses
    this test's Redis and namespace (seeded)."""
    monkeypatch.setenv("COGWORKER_REDIS_URL", redis_url)
    monkeypatch.setenv("COGWORKER_NAMESPACE", namespace)
    monkeypatch.syspath_prepend(str(ROOT))
    loaded: list[ModuleType] = []

    def load(name: str) -> ModuleType:
        module_name = f"examples.dashboard.{name}"
        sys.modules.pop(module_name, None)
        module = importlib.import_module(module_name)
        seed(module.jobs)
        loaded.append(module)
        return module

    yield load
    for module in loaded:
        module.jobs.close()


def links_of(html: str) -> list[str]:
    return re.findall(r'(?:href|action|hx-post|data-poll)="(/[^"]*)"', html)


def check_prefixed(html: str, prefix: str) -> None:
    links = links_of(html)
    assert links, "no links found"
    outside = [link for link in links if not link.startswith(prefix + "/")]
    assert outside == []


def test_mounted_in_starlette_every_link_carries_the_prefix(web_app: App,
                                                            redis_client: redis.Redis) -> None:
    seed(web_app)
    host = Starlette(routes=[Mount("/ops/cogworker", create_app(web_app))])
    url, server, thread = serve(host)
    try:
        with httpx.Client(base_url=url) as http:
            for path in ("/ops/cogworker", "/ops/cogworker/", "/ops/cogworker/jobs",
                         "/ops/cogworker/workers", "/ops/cogworker/locks"):
                response = http.get(path, follow_redirects=True)
                assert response.status_code == 200, path
                check_prefixed(response.text, "/ops/cogworker")
            assert "Path=/ops/cogworker" in http.get("/ops/cogworker/").headers.get(
                "set-cookie", "Path=/ops/cogworker")
            action = http.post("/ops/cogworker/queues/pause", data={"queue": "mail"},
                               headers={"Sec-Fetch-Site": "same-origin"})
            assert action.headers["location"] == "/ops/cogworker/overview?notice=paused"
            assert http.get("/ops/cogworker/static/app.css").status_code == 200
    finally:
        server.should_exit = True
        thread.join(10)
    assert client_of(web_app).sismember(keys_of(web_app).paused_queues, "mail")


def test_fastapi_example_behind_its_login(example: object) -> None:
    module = example("fastapi_site")  # type: ignore[operator]
    url, server, thread = serve(module.site)
    try:
        with httpx.Client(base_url=url) as http:
            assert http.get("/cogworker/jobs").status_code == 401
            page = http.get("/cogworker/jobs", headers=ADMIN)
            assert page.status_code == 200
            check_prefixed(page.text, "/cogworker")
            done = http.post("/cogworker/queues/pause", data={"queue": "mail"},
                             headers={**ADMIN, "Sec-Fetch-Site": "same-origin"})
            assert done.headers["location"] == "/cogworker/overview?notice=paused"
    finally:
        server.should_exit = True
        thread.join(10)
    assert client_of(module.jobs).sismember(keys_of(module.jobs).paused_queues, "mail")


def test_flask_example_behind_its_login(example: object) -> None:
    module = example("flask_site")  # type: ignore[operator]
    client = module.site.test_client()
    assert client.get("/cogworker/jobs").status_code == 401
    page = client.get("/cogworker/jobs?status=dead", headers=ADMIN)
    assert page.status_code == 200
    check_prefixed(page.get_data(as_text=True), "/cogworker")
    done = client.post("/cogworker/jobs/dead/clear", data={"confirm": "dead"},
                       headers={**ADMIN, "Sec-Fetch-Site": "same-origin"})
    assert done.status_code == 303 and done.headers["location"].startswith("/cogworker/jobs")
    assert client_of(module.jobs).zcard(keys_of(module.jobs).dead) == 0


def test_flask_dispatcher_mount(example: object) -> None:
    from flask import Flask
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    module = example("flask_site")  # type: ignore[operator]
    host = Flask("host")
    host.wsgi_app = DispatcherMiddleware(  # type: ignore[method-assign]
        host.wsgi_app, {"/cogworker": module.board})
    page = host.test_client().get("/cogworker/workers")
    assert page.status_code == 200
    check_prefixed(page.get_data(as_text=True), "/cogworker")


def test_django_example_for_staff_only(example: object) -> None:
    module = example("django_site")  # type: ignore[operator]
    from django.test import Client

    client = Client(SERVER_NAME="localhost")
    assert client.get("/cogworker/jobs").status_code == 401
    page = client.get("/cogworker/jobs", headers=ADMIN)
    assert page.status_code == 200
    check_prefixed(page.content.decode(), "/cogworker")
    done = client.post("/cogworker/queues/pause", {"queue": "mail"},
                       headers={**ADMIN, "Sec-Fetch-Site": "same-origin"})
    assert done.status_code == 303
    assert client_of(module.jobs).sismember(keys_of(module.jobs).paused_queues, "mail")


def test_new_tabs_and_the_exporter_under_a_prefix_in_asgi_and_wsgi(
        web_app: App, redis_client: redis.Redis) -> None:
    from wsgiref.util import setup_testing_defaults

    from cogworker.web.wsgi import forward, wsgi_app

    seed(web_app)
    host = Starlette(routes=[Mount("/ops/cogworker", create_app(web_app))])
    url, server, thread = serve(host)
    try:
        with httpx.Client(base_url=url) as http:
            for path in ("/ops/cogworker/history", "/ops/cogworker/timings",
                         "/ops/cogworker/history?status=failed&sort=duration"):
                response = http.get(path)
                assert response.status_code == 200, path
                check_prefixed(response.text, "/ops/cogworker")
            scrape = http.get("/ops/cogworker/metrics")
            assert scrape.status_code == 200 and "cogworker_processed_total" in scrape.text
    finally:
        server.should_exit = True
        thread.join(10)
    board = wsgi_app(web_app)
    for path, expected in (("/cogworker/metrics", "cogworker_dead_size"),
                           ("/cogworker/history", 'action="/cogworker/history"')):
        environ: dict[str, object] = {"PATH_INFO": path, "REQUEST_METHOD": "GET"}
        setup_testing_defaults(environ)
        status, _headers, body = forward(board, environ, "/cogworker")
        assert status == 200 and expected in body.decode(), path
