"""cogworker.core is the bottom layer: no Redis, and nothing from the layers above it; and
Redis stays inside cogworker.redis, reached only by the wiring.

Every import counts, those under ``TYPE_CHECKING`` and inside functions included: a contract
that names a type from above ties core to it all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cogworker
import cogworker.core

CORE = Path(cogworker.core.__file__).parent
PACKAGE = Path(cogworker.__file__).parent

REDIS_WIRING = {"cli/redis_cmd.py", "testing/pytest_plugin.py"}
"""The only modules outside ``cogworker/redis/`` that may import ``cogworker.redis``: the
private-server commands of the CLI (the top layer) and the pytest plugin's server fixture.
The ``redis`` broker plugin itself lives inside ``cogworker/redis/``."""

CONTRACT_MODULES = ("broker", "plugin_host.py")
"""The broker contract and the plugin view: written against core only, from the start."""



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


def test_no_core_module_points_up() -> None:
    offenders = {name: sorted(filter(points_up, imported_modules(path)))
                 for name, path in core_modules().items()}

    assert {name: found for name, found in offenders.items() if found} == {}
    assert {"client.py", "job.py", "middleware.py", "enqueuer.py"} <= offenders.keys()


def outside_redis() -> dict[str, set[str]]:
    """Every module of the package outside ``cogworker/redis/`` with what it imports."""
    return {str(path.relative_to(PACKAGE)): imported_modules(path)
            for path in sorted(PACKAGE.rglob("*.py"))
            if path.relative_to(PACKAGE).parts[0] != "redis"}


def test_redis_py_is_imported_only_inside_cogworker_redis() -> None:
    modules = outside_redis()
    offenders = {name: sorted(n for n in found if n == "redis" or n.startswith("redis."))
                 for name, found in modules.items()}

    assert {name: found for name, found in offenders.items() if found} == {}
    assert {"app.py", "worker/manager.py", "api/stats.py", "fetchers/reliable.py"} <= \
        modules.keys()


def test_only_the_wiring_imports_cogworker_redis() -> None:
    importers = {name for name, found in outside_redis().items()
                 if any(n == "cogworker.redis" or n.startswith("cogworker.redis.")
                        for n in found)}

    assert importers == REDIS_WIRING
