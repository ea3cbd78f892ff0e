"""cogworker.core is the bottom layer: no Redis, and nothing from the layers above it.

Every import counts, those under ``TYPE_CHECKING`` included: a contract that names a type
from above ties core to it all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cogworker.core

CORE = Path(cogworker.core.__file__).parent

CONTRACT_MODULES = ("broker", "plugin_host.py")
"""The broker contract and the plugin view: written against core only, from the start."""

STILL_IMPORTING_APP = {
    "client.py": ["cogworker.app"],
    "job.py": ["cogworker.app"],
    "middleware.py": ["cogworker.app"],
}
"""Core modules that still name ``App`` (or the dashboard's ``Tab``) in their types, until
their hooks and contexts take a ``PluginHost``. The exact set: a new import pointing up
fails, and so does one fixed without being struck off here."""


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):  # every import, in functions and TYPE_CHECKING blocks too
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def core_modules() -> dict[str, Path]:
    return {str(path.relative_to(CORE)): path for path in sorted(CORE.rglob("*.py"))}


def points_up(name: str) -> bool:
    """An import of cogworker outside core (the package itself included: it imports App)."""
    is_ours = name == "cogworker" or name.startswith("cogworker.")
    return is_ours and not (name == "cogworker.core" or name.startswith("cogworker.core."))


def test_core_never_imports_redis() -> None:
    offenders = {
        name: sorted(found for found in imported_modules(path)
                     if found == "redis" or found.startswith(("redis.", "cogworker.redis")))
        for name, path in core_modules().items()
    }
    assert {name: found for name, found in offenders.items() if found} == {}
    assert "broker/queues.py" in offenders  # the scan looked inside the contract package
    assert len(offenders) > 20


def test_the_contract_imports_nothing_above_core() -> None:
    contract = {name: path for name, path in core_modules().items()
                if name.startswith(CONTRACT_MODULES)}
    offenders = {name: sorted(filter(points_up, imported_modules(path)))
                 for name, path in contract.items()}

    assert {name: found for name, found in offenders.items() if found} == {}
    assert {"broker/composite.py", "broker/held.py", "plugin_host.py"} <= contract.keys()


def test_only_the_known_core_modules_still_point_up() -> None:
    offenders = {name: sorted(filter(points_up, imported_modules(path)))
                 for name, path in core_modules().items()}

    assert {name: found for name, found in offenders.items() if found} == STILL_IMPORTING_APP
