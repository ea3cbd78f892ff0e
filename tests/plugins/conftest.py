"""The ``fake_site`` fixture: a fake site-packages directory on ``sys.path``."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugins.fake_site import FakeSite


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    """A fresh fake site-packages directory prepended to ``sys.path``."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delenv("COGWORKER_TRACE_PLUGINS", raising=False)
    site = FakeSite(root)
    yield site
    site.unload()
    importlib.invalidate_caches()
