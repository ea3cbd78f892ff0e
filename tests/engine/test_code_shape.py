"""The code-shape rules of DESIGN.md, checked on every module of the package: a module has at
most 400 lines and a function (docstring included) at most 60. A merge that pushes a module
over is caught here, not in a later review."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "cogworker"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def test_the_package_is_where_this_test_looks() -> None:
    assert (SOURCE / "app.py").is_file() and len(_modules()) > 100


def test_every_module_has_at_most_400_lines() -> None:
    over = {str(path.relative_to(SOURCE)): lines for path in _modules()
            if (lines := path.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES}
    assert over == {}, f"split these modules by responsibility: {over}"


def test_every_function_has_at_most_60_lines() -> None:
    over: dict[str, int] = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    over[f"{path.relative_to(SOURCE)}:{node.lineno} {node.name}"] = length
    assert over == {}, f"split these functions: {over}"
