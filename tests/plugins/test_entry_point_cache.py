"""The entry-point scan's cache: used while nothing changed, never after an install.

Each test has its own cache folder (``COGWORKER_CACHE_DIR``) and searches only its fake
site and the folder cogworker itself is installed in, so that no other file of the machine
decides whether the cache may be stored. The fake site is dated a minute back before the
scan that should be kept, as anything installed more than two seconds ago would be: a
scan whose files are younger than that is never stored.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cogworker.core import plugin_cache
from cogworker.core.plugins import discover
from plugins.fake_site import FakeSite
from plugins.test_third_party_plugin import ACME_FETCH, ACME_PYPROJECT, pip_install

COGWORKER_FOLDER = str(importlib.metadata.distribution("cogworker").locate_file(""))


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              fake_site: FakeSite) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(plugin_cache.CACHE_DIR_ENV, str(folder))
    monkeypatch.setattr(sys, "path", [str(fake_site.root), COGWORKER_FOLDER])
    return folder


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each real scan of the entry points (by group)."""
    real = plugin_cache.scan
    calls: list[str] = []

    def counted(group: str) -> list[plugin_cache.EntryPointRecord]:
        calls.append(group)
        return real(group)

    monkeypatch.setattr(plugin_cache, "scan", counted)
    return calls


def age(root: Path) -> None:
    """Date ``root`` and everything in it a minute back: past the racy window."""
    past = time.time() - 60
    for path in [*root.rglob("*"), root]:
        os.utime(path, (past, past))


def install_acme(site: FakeSite, target: str = "acme.fetch") -> None:
    site.add_distribution("acme-plugins", {"acme-fetch": target}, version="2.0")


@pytest.mark.usefixtures("cache_dir")
def test_an_unchanged_environment_is_not_scanned_twice(
        fake_site: FakeSite, scans: list[str]) -> None:
    install_acme(fake_site)
    age(fake_site.root)

    first = discover()
    second = discover()

    assert scans == ["cogworker"]
    assert second["acme-fetch"] == first["acme-fetch"]
    assert (second["acme-fetch"].distribution, second["acme-fetch"].version) == (
        "acme-plugins", "2.0")
    entry_point = second["acme-fetch"].entry_point
    assert entry_point is not None
    assert entry_point.dist is not None
    assert entry_point.dist.name == "acme-plugins"


@pytest.mark.usefixtures("cache_dir")
def test_a_plugin_installed_after_the_scan_is_found(
        fake_site: FakeSite, scans: list[str]) -> None:
    age(fake_site.root)
    assert "acme-fetch" not in discover()
    assert "acme-fetch" not in discover()
    assert len(scans) == 1

    install_acme(fake_site)

    assert discover()["acme-fetch"].target == "acme.fetch"
    assert len(scans) == 2


@pytest.mark.usefixtures("cache_dir")
def test_a_replaced_entry_points_function_is_never_hidden_by_the_cache(
        fake_site: FakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    age(fake_site.root)
    discover()  # cached: nothing changes on the disk from here on
    real = importlib.metadata.entry_points
    extra = importlib.metadata.EntryPoint("faked", "faked.module", "cogworker")

    def with_a_fake(**selection: str) -> list[importlib.metadata.EntryPoint]:
        return [*real(**selection), extra]

    monkeypatch.setattr(importlib.metadata, "entry_points", with_a_fake)

    assert discover()["faked"].target == "faked.module"


@pytest.mark.usefixtures("cache_dir")
def test_an_uninstalled_plugin_is_gone(fake_site: FakeSite) -> None:
    install_acme(fake_site)
    age(fake_site.root)
    assert "acme-fetch" in discover()

    shutil.rmtree(fake_site.root / "acme_plugins-2.0.dist-info")

    assert "acme-fetch" not in discover()


@pytest.mark.usefixtures("cache_dir")
def test_files_coming_and_going_beside_no_distribution_keep_the_cache(
        fake_site: FakeSite, scans: list[str]) -> None:
    install_acme(fake_site)
    age(fake_site.root)
    discover()

    (fake_site.root / "app.log").write_text("a script's folder changes all the time\n",
                                            encoding="utf-8")

    assert "acme-fetch" in discover()
    assert "acme-fetch" in discover()
    assert len(scans) == 1


@pytest.mark.usefixtures("cache_dir")
def test_a_reinstall_of_the_same_version_that_adds_a_plugin_is_seen(
        fake_site: FakeSite) -> None:
    fake_site.add_distribution("my-app", {}, version="1.0")  # no cogworker plugin yet
    age(fake_site.root)
    assert "my-plugin" not in discover()

    shutil.rmtree(fake_site.root / "my_app-1.0.dist-info")  # what pip install -e . does
    fake_site.add_distribution("my-app", {"my-plugin": "my_app.plugin"}, version="1.0")

    assert discover()["my-plugin"].distribution == "my-app"


@pytest.mark.usefixtures("cache_dir")
def test_entry_points_rewritten_in_place_are_read_again(fake_site: FakeSite) -> None:
    install_acme(fake_site)
    age(fake_site.root)
    assert discover()["acme-fetch"].target == "acme.fetch"
    entry_points = fake_site.root / "acme_plugins-2.0.dist-info" / "entry_points.txt"
    site_time = fake_site.root.stat().st_mtime_ns

    entry_points.write_text("[cogworker]\nacme-fetch = acme.other_fetch\n", encoding="utf-8")

    assert fake_site.root.stat().st_mtime_ns == site_time  # only the plugin's file tells
    assert discover()["acme-fetch"].target == "acme.other_fetch"


def test_a_scan_of_files_written_just_now_is_not_stored(
        cache_dir: Path, fake_site: FakeSite, scans: list[str]) -> None:
    install_acme(fake_site)  # a second ago: an install may still be writing

    discover()
    discover()

    assert len(scans) == 2
    assert not any(cache_dir.glob("*.json"))


def test_off_turns_the_cache_off(cache_dir: Path, fake_site: FakeSite, scans: list[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(plugin_cache.CACHE_DIR_ENV, "off")
    age(fake_site.root)

    discover()
    discover()

    assert len(scans) == 2
    assert not cache_dir.exists()


def test_a_damaged_cache_file_is_scanned_over(
        cache_dir: Path, fake_site: FakeSite, scans: list[str]) -> None:
    install_acme(fake_site)
    age(fake_site.root)
    discover()
    [cache_file] = cache_dir.glob("*.json")
    cache_file.write_text(f'{{"format": {plugin_cache.FORMAT}, "scans": {{"', encoding="utf-8")

    assert "acme-fetch" in discover()
    assert len(scans) == 2
    assert json.loads(cache_file.read_text(encoding="utf-8"))["format"] == plugin_cache.FORMAT


def test_a_cache_folder_that_cannot_be_made_only_costs_the_scan(
        tmp_path: Path, fake_site: FakeSite, scans: list[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv(plugin_cache.CACHE_DIR_ENV, str(blocker / "cache"))
    monkeypatch.setattr(sys, "path", [str(fake_site.root), COGWORKER_FOLDER])
    install_acme(fake_site)
    age(fake_site.root)

    assert "acme-fetch" in discover()
    assert "acme-fetch" in discover()
    assert len(scans) == 2


LIST_PLUGINS = "from cogworker.core.plugins import discover; print(' '.join(discover()))"


@pytest.mark.slow
def test_a_pip_install_is_seen_by_the_next_process(tmp_path: Path) -> None:
    """Fresh interpreters, as a user's: one fills the cache, pip installs a plugin, the
    next one lists it."""
    target, work = tmp_path / "target", tmp_path / "work"  # work: the cwd, on sys.path
    target.mkdir()
    work.mkdir()
    age(target)
    age(work)
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(target), plugin_cache.CACHE_DIR_ENV: str(cache)}

    def listed() -> list[str]:
        done = subprocess.run([sys.executable, "-c", LIST_PLUGINS], env=env, cwd=work,
                              capture_output=True, text=True, check=True)
        return done.stdout.split()

    assert "acme-fetch" not in listed()
    assert any(cache.glob("*.json"))  # the scan was kept: the next process reads it
    project = tmp_path / "acme-cogworker"
    (project / "acme_cogworker").mkdir(parents=True)
    (project / "pyproject.toml").write_text(textwrap.dedent(ACME_PYPROJECT), encoding="utf-8")
    (project / "acme_cogworker" / "__init__.py").write_text("", encoding="utf-8")
    (project / "acme_cogworker" / "fetch.py").write_text(textwrap.dedent(ACME_FETCH),
                                                          encoding="utf-8")

    pip_install(project, target)

    assert "acme-fetch" in listed()
