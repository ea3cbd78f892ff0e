"""cogworker declares its builtins through the same entry-point group as third parties."""

from __future__ import annotations

import sys
from pathlib import Path

from cogworker.core.plugins import BUILTIN_PLUGINS, ENTRY_POINT_GROUP
from cogworker.core.settings import DEFAULT_PLUGINS

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_pyproject_entry_points_are_exactly_the_builtins() -> None:
    document = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))

    declared = document["project"]["entry-points"][ENTRY_POINT_GROUP]

    assert sorted(declared) == sorted(BUILTIN_PLUGINS)
    assert set(DEFAULT_PLUGINS) <= set(BUILTIN_PLUGINS)
