"""``docs/reference/hooks.md`` is generated from the hookspecs and must be up to date."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cogworker.core import hookspecs

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def generator(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``scripts/gen_hook_docs.py`` imported as a module (scripts/ is not a package)."""
    path = ROOT / "scripts" / "gen_hook_docs.py"
    spec = importlib.util.spec_from_file_location("gen_hook_docs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look it up there
    spec.loader.exec_module(module)
    return module


def test_generated_hook_reference_is_up_to_date(generator: ModuleType) -> None:
    generated = generator.render()

    committed = (ROOT / "docs" / "reference" / "hooks.md").read_text(encoding="utf-8")

    assert committed == generated, "run: python scripts/gen_hook_docs.py"


def test_every_hook_has_a_section(generator: ModuleType) -> None:
    generated = generator.render()

    for name in hookspecs.ALL_HOOKS:
        assert f"### `{name}`" in generated
