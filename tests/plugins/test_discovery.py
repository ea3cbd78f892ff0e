"""Discovery: every entry point is cataloged, nothing is imported, clashes are errors."""

from __future__ import annotations

import sys

import pytest

from cogworker.core.errors import PluginConflictError, PluginError
from cogworker.core.plugins import BUILTIN_PLUGINS, discover
from plugins.fake_site import FakeSite, fetcher_module


def test_catalog_lists_third_party_and_builtins_without_importing(fake_site: FakeSite) -> None:
    fake_site.add_distribution(
        "acme-plugins",
        {"acme-fetch": "acme_plugins.fetch"},
        {"acme_plugins.fetch": fetcher_module("acme")},
        version="2.5.0",
    )

    catalog = discover()

    entry = catalog["acme-fetch"]
    assert (entry.target, entry.distribution, entry.version) == (
        "acme_plugins.fetch",
        "acme-plugins",
        "2.5.0",
    )
    assert not fake_site.is_imported("acme_plugins.fetch")
    for name in BUILTIN_PLUGINS:
        assert catalog[name].distribution == "cogworker"
    assert list(catalog) == sorted(catalog)


def test_name_claimed_by_two_distributions_names_both(fake_site: FakeSite) -> None:
    fake_site.add_distribution("acme-one", {"shared-name": "acme_one"})
    fake_site.add_distribution("acme-two", {"shared-name": "acme_two"})

    with pytest.raises(PluginConflictError) as caught:
        discover()

    message = str(caught.value)
    assert "'shared-name'" in message
    assert "acme-one" in message
    assert "acme-two" in message
    assert "uninstall" in message.lower()


def test_third_party_cannot_take_a_builtin_name(fake_site: FakeSite) -> None:
    fake_site.add_distribution("sneaky-basic", {"basic": "sneaky_basic"})

    with pytest.raises(PluginConflictError, match="'basic'") as caught:
        discover()

    assert "'cogworker'" in str(caught.value)
    assert "'sneaky-basic'" in str(caught.value)


def test_missing_builtin_metadata_says_to_reinstall(
    fake_site: FakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_site.add_distribution("acme-plugins", {"acme-fetch": "acme_plugins.fetch"})
    # Only the fake site is searched: as in a checkout whose metadata was never installed.
    monkeypatch.setattr(sys, "path", [str(fake_site.root)])

    with pytest.raises(PluginError) as caught:
        discover()

    message = str(caught.value)
    assert "basic, reliable, redis, unique, periodic-locks" in message
    assert "entry_points.txt" in message
    assert "pip install -e ." in message
