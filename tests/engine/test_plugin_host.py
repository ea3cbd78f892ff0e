"""``PluginHost``, the view of the app plugins receive: ``App`` is one, structurally.

mypy checks :func:`host_view` (tests are type-checked): it would fail the moment ``App``
lost or changed a member the view declares.
"""

from __future__ import annotations

import logging

import pytest
from typing_extensions import get_protocol_members

import cogworker
from cogworker.core.plugin_host import PluginHost, PluginHostBase, plugin_logger

NO_REDIS = "redis://127.0.0.1:1/0"


class Collecting(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def host_view(app: cogworker.App) -> PluginHost:
    return app  # the assignment is the check: App satisfies the view


def test_an_app_gives_a_plugin_its_options() -> None:
    app = cogworker.App(redis_url=NO_REDIS,
                        plugin_options={"acme": {"level": 3, "tags": ["a"]}})
    host = host_view(app)

    assert dict(host.options("acme")) == {"level": 3, "tags": ["a"]}
    assert dict(host.options("other")) == {}
    with pytest.raises(TypeError):
        host.options("acme")["level"] = 4  # type: ignore[index]


def test_a_plugin_logger_is_a_child_of_cogworkers() -> None:
    host = host_view(cogworker.App(redis_url=NO_REDIS))

    logger = host.logger("acme")

    assert logger is logging.getLogger("cogworker.plugin.acme")
    handler = Collecting()
    cogworker_logger = logging.getLogger("cogworker")  # what the CLI configures
    cogworker_logger.addHandler(handler)
    try:
        logger.warning("acme is low on %s", "coffee")
    finally:
        cogworker_logger.removeHandler(handler)
    assert [record.getMessage() for record in handler.records] == ["acme is low on coffee"]
    with pytest.raises(ValueError, match="needs the plugin's name"):
        plugin_logger("")


def test_the_view_reads_the_apps_own_state() -> None:
    app = cogworker.App(redis_url=NO_REDIS, concurrency=3)
    host = host_view(app)

    assert host.settings.concurrency == 3
    assert host.identity == app.identity
    assert host.clock is app.clock and host.registry is app.registry
    host.extras["acme"] = "state"
    assert app.extras["acme"] == "state"


def test_the_host_is_the_view_and_the_broker() -> None:
    added = get_protocol_members(PluginHost) - get_protocol_members(PluginHostBase)

    assert added == {"broker"}
    assert {"settings", "identity", "clock", "hooks", "registry", "extras", "logger",
            "options", "push", "submit"} == get_protocol_members(PluginHostBase)


def test_a_plugin_enqueues_through_the_host() -> None:
    app = cogworker.App(redis_url=NO_REDIS)
    host = host_view(app)
    with app.testing.fake():
        jid = host.push({"class": "Callback", "args": [1], "queue": "callbacks"})
        assert jid is not None
        recorded = app.testing.jobs_of("Callback")
    assert [(job["jid"], job["args"], job["queue"]) for job in recorded] == \
        [(jid, [1], "callbacks")]
