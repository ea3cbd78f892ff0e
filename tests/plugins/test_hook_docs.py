"""``docs/reference/hooks.md`` is generated from the hookspecs and must be up to date."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
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


BUILTIN_MODULES = {
    "basic": "cogworker.fetchers.basic",
    "reliable": "cogworker.fetchers.reliable",
    "redis": "cogworker.redis.plugin",
    "unique": "cogworker.plugins.unique",
    "periodic-locks": "cogworker.plugins.periodic_locks",
    "web-tabs": "cogworker.web.builtin",
    "memory": "cogworker.testing.memory_broker.plugin",
    "status": "cogworker.plugins.status",
    "attempts": "cogworker.plugins.attempts",
    "history": "cogworker.plugins.history",
    "otel": "cogworker.plugins.otel",
    "metrics": "cogworker.plugins.metrics",
    "cancel": "cogworker.plugins.cancel",
    "limits": "cogworker.plugins.limits",
    "batches": "cogworker.plugins.batches",
    "workflows": "cogworker.plugins.workflows",
}


def named_implementers(hook: str) -> set[str]:
    """The plugins a hookspec's "Implemented by builtin:" line names (remarks in
    parentheses left out; "none" names none)."""
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
    line = next(part for part in doc.split("\n\n") if part.startswith("Implemented by builtin:"))
    names = re.sub(r"\([^()]*\)", "", " ".join(line.split()).removeprefix(
        "Implemented by builtin:").rstrip(".")).replace("`", "")
    return {name.strip() for name in names.split(",") if name.strip()} - {"none"}


@pytest.mark.parametrize("hook", hookspecs.ALL_HOOKS)
def test_the_implemented_by_builtin_line_is_true(hook: str) -> None:
    implementers = {name for name, module in BUILTIN_MODULES.items()
                    if hasattr(getattr(importlib.import_module(module), hook, None),
                               "cogworker_impl")}

    assert named_implementers(hook) == implementers
