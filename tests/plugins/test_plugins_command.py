"""``cogworker plugins`` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogworker.cli.plugins_cmd import plugins_command
from plugins.fake_site import FakeSite, fetcher_module, heartbeat_module

# The real builtins are listed but never activated here: their modules are not needed.
NO_BUILTIN_DEFAULTS = ["--plugin", "no:unique", "--plugin", "no:periodic-locks"]


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    """A runner in an empty directory with no cogworker settings in the environment."""
    monkeypatch.chdir(tmp_path)
    for variable in ("COGWORKER_CONFIG", "COGWORKER_FETCH", "COGWORKER_PLUGINS"):
        monkeypatch.delenv(variable, raising=False)
    return CliRunner()


@pytest.fixture
def site(fake_site: FakeSite) -> FakeSite:
    fake_site.add_distribution(
        "basic-like",
        {"basic-like": "basic_like"},
        {"basic_like": fetcher_module("basic", trylast=True)},
    )
    fake_site.add_distribution(
        "acme-beat",
        {"acme-beat": "acme_beat"},
        {"acme_beat": heartbeat_module("beat")},
        version="0.4",
    )
    return fake_site


def test_json_lists_every_plugin_with_its_activation(site: FakeSite, runner: CliRunner) -> None:
    result = runner.invoke(
        plugins_command, ["--fetch", "basic-like", *NO_BUILTIN_DEFAULTS, "--json"]
    )

    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["basic-like"] == {
        "name": "basic-like",
        "distribution": "basic-like",
        "version": "1.0",
        "active": True,
        "hooks": ["cogworker_make_fetcher"],
    }
    assert rows["acme-beat"]["active"] is False
    assert rows["acme-beat"]["hooks"] == []
    assert rows["reliable"]["distribution"] == "cogworker"
    assert not rows["reliable"]["active"]
    assert not site.is_imported("acme_beat")


def test_text_table_previews_a_plugin_change(site: FakeSite, runner: CliRunner) -> None:
    result = runner.invoke(
        plugins_command, ["--fetch", "basic-like", *NO_BUILTIN_DEFAULTS, "--plugin", "acme-beat"]
    )

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "DISTRIBUTION", "VERSION", "ACTIVE", "HOOKS"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["acme-beat"] == ["acme-beat", "acme-beat", "0.4", "yes", "cogworker_heartbeat"]
    assert rows["unique"][3:] == ["no", "-"]


def test_unknown_plugin_is_one_line_and_exit_2(site: FakeSite, runner: CliRunner) -> None:
    result = runner.invoke(plugins_command, ["--plugin", "acme-beet"])

    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert "'acme-beet'" in line
    assert "Did you mean 'acme-beat'?" in line


def test_conflicting_fetchers_exit_2(site: FakeSite, runner: CliRunner) -> None:
    site.add_distribution(
        "acme-plugins", {"acme-fetch": "acme_fetch"}, {"acme_fetch": fetcher_module("acme")}
    )

    result = runner.invoke(plugins_command, ["--plugin", "acme-fetch", "--plugin", "basic-like"])

    assert result.exit_code == 2
    assert "'acme-fetch'" in result.stderr
    assert "'basic-like'" in result.stderr
