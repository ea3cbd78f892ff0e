"""The documentation site builds strictly (``mkdocs build --strict``, as ``scripts/docs
build`` runs it), and the strict build does fail on a broken link, a broken anchor and a
page left out of the nav — so a green build means something."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "--site-dir", str(site)],
        cwd=config.parent, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = build(ROOT / "mkdocs.yml", tmp_path / "site")

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "search" / "search_index.json").exists()
    api = (tmp_path / "site" / "reference" / "python-api" / "index.html").read_text()
    assert "perform_on_commit" in api  # generated from the docstrings
    assert ":class:" not in api  # the reST roles were turned into code
    commands = (tmp_path / "site" / "reference" / "commands" / "index.html").read_text()
    assert "--concurrency" in commands  # generated from the click commands


def test_a_broken_link_an_anchor_or_an_orphan_page_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    for shared in ("src", "scripts", "examples"):  # examples: a page includes a README
        (copy / shared).symlink_to(ROOT / shared)
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text() + "\n[gone](how-to/no-such-page.md) "
                     "[nowhere](reference/cli.md#no-such-heading)\n")
    (copy / "docs" / "orphan.md").write_text("# Not in the nav\n")

    result = build(copy / "mkdocs.yml", tmp_path / "site")

    assert result.returncode == 1
    assert "how-to/no-such-page.md" in result.stderr
    assert "no-such-heading" in result.stderr
    assert "orphan.md" in result.stderr
    assert result.stderr.count("WARNING") == 3
