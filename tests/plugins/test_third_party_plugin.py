"""A real third-party plugin: built with hatchling and installed by pip, then activated.

Nothing here is faked on the acme side: pip writes the ``dist-info`` and
``entry_points.txt`` exactly as for a user. The "basic-like" fallback fetcher is a fake
dist-info so the test does not depend on the real builtin modules.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogworker.cli.plugins_cmd import plugins_command
from cogworker.core.hooks import Hooks
from cogworker.core.plugins import discover, load_plugins, resolve_active
from plugins.fake_site import FakeSite, fetcher_module

ACME_PYPROJECT = """
    [build-system]
    requires = ["hatchling"]
    build-backend = "hatchling.build"

    [project]
    name = "acme-cogworker"
    version = "1.2.3"

    [project.entry-points.cogworker]
    acme-fetch = "acme_cogworker.fetch"

    [tool.hatch.build.targets.wheel]
    packages = ["acme_cogworker"]
    """

ACME_FETCH = """
    from cogworker.core.markers import hookimpl


    class AcmeFetcher:
        name = "acme"
        reliable = True

        def __init__(self, broker):
            self.broker = broker


    @hookimpl
    def cogworker_make_fetcher(app, broker):
        return AcmeFetcher(broker)
    """

BUILTIN_OFF = ["no:redis", "no:unique", "no:periodic-locks", "no:metrics", "no:batches",
               "no:workflows"]


def pip_install(project: Path, target: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--disable-pip-version-check",
        "--target",
        str(target),
        str(project),
    ]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr


@pytest.fixture
def acme_installed(tmp_path: Path, fake_site: FakeSite, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "acme-cogworker"
    (project / "acme_cogworker").mkdir(parents=True)
    (project / "pyproject.toml").write_text(textwrap.dedent(ACME_PYPROJECT), encoding="utf-8")
    (project / "acme_cogworker" / "__init__.py").write_text("", encoding="utf-8")
    (project / "acme_cogworker" / "fetch.py").write_text(
        textwrap.dedent(ACME_FETCH), encoding="utf-8"
    )
    target = tmp_path / "target"
    pip_install(project, target)
    monkeypatch.syspath_prepend(str(target))
    fake_site.forget("acme_cogworker")
    fake_site.add_distribution(
        "basic-like",
        {"basic-like": "basic_like"},
        {"basic_like": fetcher_module("basic", trylast=True)},
    )
    return target


@pytest.mark.slow
def test_pip_installed_plugin_is_discovered_activated_and_fetches(
    acme_installed: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    catalog = discover()
    entry = catalog["acme-fetch"]
    assert (entry.distribution, entry.version, entry.target) == (
        "acme-cogworker",
        "1.2.3",
        "acme_cogworker.fetch",
    )
    assert entry.entry_point is not None
    assert entry.entry_point.dist is not None
    installed_module = Path(str(entry.entry_point.dist.locate_file("acme_cogworker/fetch.py")))
    assert installed_module.parent.parent == acme_installed  # pip's --target, not a fake
    assert "acme_cogworker.fetch" not in sys.modules  # installed is not activated

    assert resolve_active(catalog, "basic-like", BUILTIN_OFF) == ["basic-like"]
    active = resolve_active(catalog, "basic-like", [*BUILTIN_OFF, "acme-fetch"])
    assert active == ["acme-fetch"]  # the explicit fetcher took the slot

    app: Any = object()
    broker: Any = object()
    fetcher = Hooks(load_plugins(catalog, active)).make_fetcher(app, broker)
    assert (fetcher.name, type(fetcher).__module__) == ("acme", "acme_cogworker.fetch")

    # Even registered side by side, the trylast builtin-like fetcher yields to acme's.
    both = Hooks(load_plugins(catalog, ["basic-like", "acme-fetch"]))
    assert both.make_fetcher(app, broker).name == "acme"

    monkeypatch.chdir(tmp_path)
    for variable in ("COGWORKER_CONFIG", "COGWORKER_FETCH", "COGWORKER_PLUGINS"):
        monkeypatch.delenv(variable, raising=False)
    options = ["--fetch", "basic-like", "--json"]
    for change in [*BUILTIN_OFF, "acme-fetch"]:
        options += ["--plugin", change]
    result = CliRunner().invoke(plugins_command, options)
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["acme-fetch"] == {
        "name": "acme-fetch",
        "distribution": "acme-cogworker",
        "version": "1.2.3",
        "active": True,
        "hooks": ["cogworker_make_fetcher"],
    }
    assert rows["basic-like"]["active"] is False
