"""cogworker.core must not depend on Redis: the contracts live there, Redis elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

import cogworker.core

CORE = Path(cogworker.core.__file__).parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_core_never_imports_redis() -> None:
    offenders = {
        path.name: sorted(name for name in imported_modules(path)
                          if name == "redis" or name.startswith(("redis.", "cogworker.redis")))
        for path in CORE.glob("*.py")
    }
    assert {name: found for name, found in offenders.items() if found} == {}
    assert len(offenders) > 10  # the scan really looked at the core modules
