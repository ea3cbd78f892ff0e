"""Activation: defaults, NAME / no:NAME in order, the fetch slot, unknown names."""

from __future__ import annotations

import pytest

from cogworker.core.config_sources import load_settings
from cogworker.core.errors import PluginConflictError, PluginLoadError, PluginNotFoundError
from cogworker.core.plugins import (
    LOCAL_DISTRIBUTION,
    describe,
    discover,
    load_plugins,
    resolve_active,
)
from cogworker.core.settings import Settings
from plugins.fake_site import FakeSite, fetcher_module, heartbeat_module


def test_default_set_is_the_fetch_plugin_and_the_defaults(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-plugins", {"acme-fetch": "acme_fetch"}, {"acme_fetch": fetcher_module("acme")}
    )

    active = resolve_active(discover(), "reliable", [])

    assert active == ["reliable", "redis", "unique", "periodic-locks", "metrics",
                      "batches", "workflows"]
    assert not fake_site.is_imported("acme_fetch")  # installed is not activated


def test_the_default_set_is_a_setting(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-plugins", {"acme-broker": "acme_broker"}, {"acme_broker": heartbeat_module("b")}
    )
    settings = Settings(default_plugins=("acme-broker", "unique"), plugins=("no:unique",))

    active = resolve_active(discover(), "reliable", settings.plugins, settings)

    assert active == ["reliable", "acme-broker"]


def test_an_unknown_default_plugin_names_its_source(fake_site: FakeSite) -> None:
    settings = load_settings(code={"default_plugins": ("redis", "acme-missing")})

    with pytest.raises(PluginNotFoundError, match=r"acme-missing.*App\(\.\.\.\) arguments"):
        resolve_active(discover(), "reliable", settings.plugins, settings)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (["no:unique"], ["reliable", "redis", "periodic-locks", "metrics", "batches", "workflows"]),
        (
            ["acme-beat", "no:acme-beat", "acme-beat"],
            ["reliable", "redis", "unique", "periodic-locks", "metrics",
             "batches", "workflows", "acme-beat"],
        ),
        (["acme-beat", "no:acme-beat"],
         ["reliable", "redis", "unique", "periodic-locks", "metrics", "batches", "workflows"]),
        (
            ["acme-beat", "acme-beat"],
            ["reliable", "redis", "unique", "periodic-locks", "metrics",
             "batches", "workflows", "acme-beat"],
        ),
    ],
)
def test_changes_apply_in_order(
    fake_site: FakeSite, changes: list[str], expected: list[str]
) -> None:
    fake_site.add_distribution(
        "acme-beat", {"acme-beat": "acme_beat"}, {"acme_beat": heartbeat_module("beat")}
    )

    assert resolve_active(discover(), "reliable", changes) == expected


def test_explicit_fetcher_takes_the_fetch_slot(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-plugins", {"acme-fetch": "acme_fetch"}, {"acme_fetch": fetcher_module("acme")}
    )

    active = resolve_active(discover(), "reliable", ["acme-fetch"])

    assert active == ["redis", "unique", "periodic-locks", "metrics",
                      "batches", "workflows", "acme-fetch"]


def test_explicit_trylast_fetcher_also_replaces_the_default(fake_site: FakeSite) -> None:
    # `--plugin basic` must switch from reliable to basic although basic is trylast.
    fake_site.add_distribution(
        "basic-like",
        {"basic-like": "basic_like"},
        {"basic_like": fetcher_module("basic", trylast=True)},
    )

    active = resolve_active(discover(), "reliable", ["no:unique", "basic-like"])

    assert active == ["redis", "periodic-locks", "metrics", "batches", "workflows", "basic-like"]


def test_fetcher_activated_then_deactivated_keeps_the_default(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-plugins", {"acme-fetch": "acme_fetch"}, {"acme_fetch": fetcher_module("acme")}
    )

    active = resolve_active(discover(), "reliable", ["acme-fetch", "no:acme-fetch"])

    assert active == ["reliable", "redis", "unique", "periodic-locks", "metrics",
                      "batches", "workflows"]


def test_two_explicit_fetchers_name_both_plugins_and_distributions(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-plugins", {"acme-fetch": "acme_fetch"}, {"acme_fetch": fetcher_module("acme")}
    )
    fake_site.add_distribution(
        "other-plugins",
        {"other-fetch": "other_fetch"},
        {"other_fetch": fetcher_module("other", trylast=True)},
    )

    with pytest.raises(PluginConflictError) as caught:
        resolve_active(discover(), "reliable", ["acme-fetch", "other-fetch"])

    message = str(caught.value)
    for expected in ("'acme-fetch'", "'acme-plugins'", "'other-fetch'", "'other-plugins'"):
        assert expected in message
    assert "--plugin no:acme-fetch" in message


@pytest.mark.parametrize("change", ["uniqe", "no:uniqe"])
def test_unknown_name_suggests_the_closest_installed_one(fake_site: FakeSite, change: str) -> None:
    with pytest.raises(PluginNotFoundError) as caught:
        resolve_active(discover(), "reliable", [change])

    assert caught.value.name == "uniqe"
    assert "Did you mean 'unique'?" in str(caught.value)
    assert {"basic", "reliable", "unique", "periodic-locks"} <= set(caught.value.installed)


def test_unknown_fetch_setting_is_reported(fake_site: FakeSite) -> None:
    with pytest.raises(PluginNotFoundError, match="Did you mean 'reliable'"):
        resolve_active(discover(), "relaible", [])


def test_explicit_plugin_that_fails_to_import_is_a_load_error(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "broken-dist",
        {"broken": "broken_plugin"},
        {"broken_plugin": "raise RuntimeError('boom at import')\n"},
    )

    with pytest.raises(PluginLoadError, match="'broken-dist'"):
        resolve_active(discover(), "reliable", ["broken"])


def test_local_module_plugin_is_registered_directly(fake_site: FakeSite) -> None:
    fake_site.add_module("devtools.beat", heartbeat_module("local"))
    catalog = discover()

    active = resolve_active(
        catalog, "reliable",
        ["no:unique", "no:periodic-locks", "no:metrics", "no:batches", "no:reliable",
         "no:redis", "no:workflows",
         "devtools.beat:"]
    )
    pm = load_plugins(catalog, active)

    assert active == ["devtools.beat:"]
    info = next(i for i in describe(catalog, pm) if i.name == "devtools.beat:")
    assert (info.distribution, info.active, info.hooks) == (
        LOCAL_DISTRIBUTION,
        True,
        ("cogworker_heartbeat",),
    )


def test_local_module_plugin_can_be_deactivated(fake_site: FakeSite) -> None:
    fake_site.add_module("devtools.beat", heartbeat_module("local"))

    active = resolve_active(discover(), "reliable", ["devtools.beat:", "no:devtools.beat:"])

    assert active == ["reliable", "redis", "unique", "periodic-locks", "metrics",
                      "batches", "workflows"]
