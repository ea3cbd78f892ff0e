"""A plugin adds a tab and its routes through ``cogworker_web_tabs``, as the built-ins do."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cogworker import hookimpl
from cogworker.app import App
from cogworker.core.errors import PluginError
from cogworker.web import Tab, create_app, dashboard
from cogworker.web.actions import Outcome, action_route
from web.conftest import StartServer
from web.seed import Seeded


def slow_jobs(request: Request) -> Response:
    board = dashboard(request)
    return board.render(request, "slow/page.html", {"tab": "slow", "threshold": 30})


class SlowJobsPlugin:
    def __init__(self, templates: Path, name: str = "slow") -> None:
        self.templates = templates
        self.name = name
        self.pressed = 0

    def press(self, board: object, request: Request, form: object) -> Outcome:
        self.pressed += 1
        return Outcome("ran")

    @hookimpl
    def cogworker_web_tabs(self, app: App) -> list[Tab]:
        return [Tab(self.name, "Slow jobs", [Route("/slow", slow_jobs),
                                            action_route("/slow/press", self.press, "/slow")],
                    icon="warning", order=60, templates=self.templates)]


@pytest.fixture
def templates(tmp_path: Path) -> Path:
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "page.html").write_text(
        '{% extends "base.html" %}{% block title %}Slow{% endblock %}'
        "{% block content %}<h1>Jobs slower than {{ threshold }}s</h1>"
        '<form method="post" action="{{ prefix }}/slow/press">{{ ui.hidden() }}'
        "<button>Press</button></form>{% endblock %}")
    return tmp_path


def test_a_plugin_tab_is_served_and_listed(web_app: App, start_server: StartServer,
                                           seeded: Seeded, templates: Path) -> None:
    plugin = SlowJobsPlugin(templates)
    web_app.hooks.plugin_manager.register(plugin, name="slow-jobs")
    live = start_server(seeded)
    with httpx.Client(base_url=live.url) as http:
        page = http.get("/slow")
        assert page.status_code == 200 and "Jobs slower than 30s" in page.text
        nav = http.get("/").text
        labels = [label for label in ("Overview", "Jobs", "Schedules", "Workers", "Locks",
                                      "Slow jobs") if f"<span>{label}</span>" in nav]
        assert labels == ["Overview", "Jobs", "Schedules", "Workers", "Locks", "Slow jobs"]
        pressed = http.post("/slow/press", data={}, headers={"Sec-Fetch-Site": "same-origin"})
        assert pressed.headers["location"] == "/slow?notice=ran"
        refused = http.post("/slow/press", data={}, headers={"Sec-Fetch-Site": "cross-site"})
        assert refused.status_code == 403
    assert plugin.pressed == 1


def test_a_tab_name_offered_twice_is_an_error(web_app: App, templates: Path) -> None:
    web_app.hooks.plugin_manager.register(SlowJobsPlugin(templates, name="jobs"), name="dup")
    with pytest.raises(PluginError, match="two tabs are named 'jobs'"):
        create_app(web_app)


def test_a_hook_returning_something_else_is_an_error(web_app: App) -> None:
    class Broken:
        @hookimpl
        def cogworker_web_tabs(self, app: App) -> list[str]:
            return ["not a tab"]

    web_app.hooks.plugin_manager.register(Broken(), name="broken")
    with pytest.raises(PluginError, match=r"not a cogworker\.web\.Tab"):
        create_app(web_app)
