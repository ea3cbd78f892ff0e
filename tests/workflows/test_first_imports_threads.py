"""A worker's first workflow steps run on several processor threads at once, and each
imports the workflow machinery on first use: those imports must not deadlock.

Each check runs in a fresh interpreter (nothing of ``cogworker.workflows`` imported yet),
where three threads released together by a barrier take the plugin's three first-use
paths: a step's marker read, a group's launch (the plugin's own job) and ``app.result``.
Before the imports went through the package, Python broke the import-lock cycle between
them with an ImportError (or a ``_DeadlockError``) in every such run. The last test keeps
every other runtime import of the machinery going through the package too.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import cogworker

RACE = r"""
import json
import threading

import cogworker
from cogworker.plugins import workflows as plugin
from cogworker.plugins.workflows_names import GROUP_LAUNCH, MARKER

app = cogworker.App(redis_url="memory://", plugins=("memory", "no:redis"))
app.hooks  # the plugins configured, as in a worker: the launch job is registered
launch = app.registry.resolve(GROUP_LAUNCH).target
barrier = threading.Barrier(3)
failures = []


def marker():
    plugin._marker({MARKER: "not a marker"})  # logged as malformed: None


def launch_group():
    try:
        launch(None, {})  # the import first; then the empty spec fails
    except KeyError:
        pass


def result():
    app.result("a-jid")


def run(path):
    barrier.wait()
    try:
        path()
    except BaseException as exc:
        failures.append(f"{path.__name__}: {exc!r}")


threads = [threading.Thread(target=run, args=(path,)) for path in (marker, launch_group, result)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
app.close()
print(json.dumps(failures))
"""


@pytest.mark.parametrize("attempt", range(5))
def test_three_threads_importing_the_workflow_machinery_at_once_all_succeed(
        attempt: int) -> None:
    done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], done.stderr[-3000:]


def _runtime_submodule_imports(path: Path) -> list[str]:
    """``from cogworker.workflows.<module> import ...`` in ``path`` outside ``if
    TYPE_CHECKING:`` blocks, as ``file:line``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(node) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
                   for node in ast.walk(block)}
    return [f"{path}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and id(node) not in typing_only
            and (node.module or "").startswith("cogworker.workflows.")]


def test_code_outside_the_package_imports_the_workflow_machinery_through_the_package() -> None:
    source = Path(cogworker.__file__).parent
    package = source / "workflows"
    found = [hit for path in sorted(source.rglob("*.py")) if package not in path.parents
             for hit in _runtime_submodule_imports(path)]
    assert found == [], "import these as `from cogworker.workflows import <module>`"
