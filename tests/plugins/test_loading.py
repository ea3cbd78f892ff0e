"""Loading: sorted registration, wrapped import errors, the exclusive-fetcher check,
``check_pending`` with plugin-added specs, tracing, and the listing."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from cogworker.core.errors import PluginConflictError, PluginLoadError
from cogworker.core.hooks import Hooks
from cogworker.core.plugins import describe, discover, load_plugins
from plugins.fake_site import FakeSite, fetcher_module, heartbeat_module

APP: Any = object()
BROKER: Any = object()

ADDS_ITS_OWN_HOOK = """
    from cogworker.core.markers import hookimpl, hookspec


    class AcmeSpecs:
        @hookspec
        def acme_report(self, total):
            '''A hook this plugin adds.'''


    @hookimpl
    def cogworker_addhooks(pluginmanager):
        pluginmanager.add_hookspecs(AcmeSpecs)


    @hookimpl
    def acme_report(total):
        return total
    """

MISSPELLED_HOOK = """
    from cogworker.core.markers import hookimpl


    @hookimpl
    def cogworker_heartbeet(worker):
        pass
    """


UNKNOWN_ARGUMENT = """
    from cogworker.core.markers import hookimpl


    @hookimpl
    def cogworker_heartbeat(worker, mood):
        pass
    """


def test_plugins_register_in_sorted_order(fake_site: FakeSite) -> None:
    for name in ("zeta", "alpha", "mid"):
        fake_site.add_distribution(
            f"{name}-dist", {name: f"{name}_beat"}, {f"{name}_beat": heartbeat_module(name)}
        )

    pm = load_plugins(discover(), ["zeta", "alpha", "mid"])

    assert [name for name, _ in pm.list_name_plugin()] == ["alpha", "mid", "zeta"]


def test_import_failure_keeps_plugin_distribution_and_cause(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "broken-dist",
        {"broken": "broken_plugin"},
        {"broken_plugin": "raise RuntimeError('boom at import')\n"},
        version="0.3",
    )

    with pytest.raises(PluginLoadError) as caught:
        load_plugins(discover(), ["broken"])

    error = caught.value
    assert (error.name, error.distribution) == ("broken", "broken-dist")
    assert isinstance(error.__cause__, RuntimeError)
    assert "RuntimeError: boom at import" in str(error)
    assert "--plugin no:broken" in str(error)


def test_entry_point_to_a_missing_module_is_a_load_error(fake_site: FakeSite) -> None:
    fake_site.add_distribution("hollow-dist", {"hollow": "hollow_plugin_not_there"})

    with pytest.raises(PluginLoadError, match="'hollow-dist'") as caught:
        load_plugins(discover(), ["hollow"])

    assert isinstance(caught.value.__cause__, ModuleNotFoundError)


def test_two_exclusive_fetchers_are_a_conflict(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-plugins", {"acme-fetch": "acme_fetch"}, {"acme_fetch": fetcher_module("acme")}
    )
    fake_site.add_distribution(
        "other-plugins", {"other-fetch": "other_fetch"}, {"other_fetch": fetcher_module("other")}
    )

    with pytest.raises(PluginConflictError) as caught:
        load_plugins(discover(), ["acme-fetch", "other-fetch"])

    message = str(caught.value)
    for expected in ("'acme-fetch'", "'acme-plugins'", "'other-fetch'", "'other-plugins'"):
        assert expected in message


def test_trylast_fetcher_yields_to_an_exclusive_one(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-plugins", {"acme-fetch": "acme_fetch"}, {"acme_fetch": fetcher_module("acme")}
    )
    fake_site.add_distribution(
        "basic-like",
        {"basic-like": "basic_like"},
        {"basic_like": fetcher_module("basic", trylast=True)},
    )

    hooks = Hooks(load_plugins(discover(), ["basic-like", "acme-fetch"]))

    assert hooks.make_fetcher(APP, BROKER).name == "acme"


def test_hooks_added_by_a_plugin_pass_check_pending(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-report", {"acme-report": "acme_report"}, {"acme_report": ADDS_ITS_OWN_HOOK}
    )

    pm = load_plugins(discover(), ["acme-report"])

    assert pm.hook.acme_report(total=3) == [3]


def test_misspelled_hook_is_reported_with_the_plugin(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "typo-dist", {"typo": "typo_plugin"}, {"typo_plugin": MISSPELLED_HOOK}
    )

    with pytest.raises(PluginLoadError, match="cogworker_heartbeet") as caught:
        load_plugins(discover(), ["typo"])

    assert (caught.value.name, caught.value.distribution) == ("typo", "typo-dist")


def test_impl_asking_for_an_argument_the_hook_lacks_is_a_load_error(
    fake_site: FakeSite,
) -> None:
    fake_site.add_distribution(
        "moody-dist", {"moody": "moody_plugin"}, {"moody_plugin": UNKNOWN_ARGUMENT}
    )

    with pytest.raises(PluginLoadError, match="mood") as caught:
        load_plugins(discover(), ["moody"])

    assert (caught.value.name, caught.value.distribution) == ("moody", "moody-dist")


def test_trace_env_logs_hook_calls(
    fake_site: FakeSite, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fake_site.add_distribution(
        "acme-plugins", {"acme-fetch": "acme_fetch"}, {"acme_fetch": fetcher_module("acme")}
    )
    monkeypatch.setenv("COGWORKER_TRACE_PLUGINS", "1")
    hooks = Hooks(load_plugins(discover(), ["acme-fetch"]))

    with caplog.at_level(logging.DEBUG, logger="cogworker.core.plugins"):
        hooks.make_fetcher(APP, BROKER)

    traced = [r.getMessage() for r in caplog.records if r.name == "cogworker.core.plugins"]
    assert any("cogworker_make_fetcher called (plugins: acme-fetch)" in m for m in traced)
    assert any("cogworker_make_fetcher returned" in m for m in traced)


def test_describe_lists_inactive_plugins_without_importing_them(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-plugins",
        {"acme-fetch": "acme_fetch"},
        {"acme_fetch": fetcher_module("acme")},
        version="2.0",
    )
    fake_site.add_distribution(
        "acme-beat",
        {"acme-beat": "acme_beat"},
        {"acme_beat": heartbeat_module("beat")},
        version="0.1",
    )
    catalog = discover()

    infos = {info.name: info for info in describe(catalog, load_plugins(catalog, ["acme-beat"]))}

    assert infos["acme-beat"].active
    assert infos["acme-beat"].hooks == ("cogworker_heartbeat",)
    assert (infos["acme-fetch"].version, infos["acme-fetch"].active) == ("2.0", False)
    assert infos["acme-fetch"].hooks == ()
    assert not fake_site.is_imported("acme_fetch")
    assert not infos["reliable"].active
