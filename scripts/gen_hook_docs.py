"""Generate ``docs/reference/hooks.md`` from the hookspec docstrings.

The hook reference is never edited by hand: the package ``src/cogworker/core/hookspecs/`` is
the only source. Its ``__init__`` gives the introduction and ``SECTION_MODULES``, the phase
modules in order; each phase module's ``SECTION`` is its title, and its hooks follow in
source order. The types passed to hooks are the classes of ``worker_handle.py``. Every file
is read with ``ast``, so nothing is imported.

Usage::

    python scripts/gen_hook_docs.py          # rewrite docs/reference/hooks.md
    python scripts/gen_hook_docs.py --check  # exit 1 if the file is out of date
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOOKSPECS = ROOT / "src" / "cogworker" / "core" / "hookspecs"
TYPE_MODULES = ("worker_handle",)
OUTPUT = ROOT / "docs" / "reference" / "hooks.md"
HOOK_PREFIX = "cogworker_"

_BANNER_RULE = re.compile(r"#\s*-{10,}\s*")
_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc):`~?([^`]+)`")
_PARAM = re.compile(r":param (\w+):\s*(.*)")


@dataclass
class Section:
    """One phase module of the hookspec package and its hooks."""

    title: str
    hooks: list[ast.FunctionDef] = field(default_factory=list)


def parse(name: str, sources: dict[str, str] | None) -> ast.Module:
    """The ``ast`` of module ``name`` of the package (``__init__`` included)."""
    if sources is not None:
        return ast.parse(sources[name])
    return ast.parse((HOOKSPECS / f"{name}.py").read_text(encoding="utf-8"))


def constant(tree: ast.Module, name: str) -> object:
    """The literal value of the module-level assignment ``name`` (plain or annotated)."""
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(value)
    raise SystemExit(f"the hookspec package has no {name} assignment where expected")


def section_of(tree: ast.Module) -> Section:
    """A phase module as a section: its ``SECTION`` title and its ``cogworker_*`` specs."""
    hooks = [node for node in tree.body
             if isinstance(node, ast.FunctionDef) and node.name.startswith(HOOK_PREFIX)]
    return Section(str(constant(tree, "SECTION")), hooks)


def inline(text: str, hook_names: set[str]) -> str:
    """reST inline markup to Markdown: roles, double backticks, links between hooks."""

    def role(match: re.Match[str]) -> str:
        target = match.group(1)
        return f"[`{target}`](#{target})" if target in hook_names else f"`{target}`"

    return _ROLE.sub(role, text).replace("``", "`")


def docstring_markdown(doc: str, hook_names: set[str]) -> str:
    """Paragraphs stay, ``:param:`` lines become a list, ``Example::`` a Python block."""
    out: list[str] = []
    lines = doc.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        param = _PARAM.match(line)
        if param:
            if out and out[-1] and not out[-1].startswith("- `"):
                out.append("")
            out.append(f"- `{param.group(1)}`: {inline(param.group(2), hook_names)}")
        elif line.endswith("::"):
            block, index = _literal_block(lines, index + 1)
            out += [inline(line[:-1], hook_names), "", "```python", block, "```"]
            continue
        else:
            if not line and out and out[-1].startswith("- `"):
                out.append("")
                index += 1
                continue
            out.append(inline(line, hook_names))
        index += 1
    return "\n".join(out).strip()


def _literal_block(lines: list[str], start: int) -> tuple[str, int]:
    """The indented block after ``::`` (dedented) and the index after it."""
    end = start
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(" ")):
        end += 1
    return textwrap.dedent("\n".join(lines[start:end])).strip("\n"), end


def signature(node: ast.FunctionDef) -> str:
    """The decorator and ``def`` line, as in the source."""
    decorators = [f"@{ast.unparse(d)}" for d in node.decorator_list]
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return "\n".join([*decorators, f"def {node.name}({ast.unparse(node.args)}){returns}: ..."])


def render_hook(node: ast.FunctionDef, hook_names: set[str]) -> str:
    doc = ast.get_docstring(node) or "(no docstring)"
    return "\n".join(
        [
            f"### `{node.name}`",
            "",
            "```python",
            signature(node),
            "```",
            "",
            docstring_markdown(doc, hook_names),
        ]
    )


def render_types(tree: ast.Module, hook_names: set[str]) -> list[str]:
    """Protocols defined in the hookspec module (what hooks receive), as stubs."""
    parts: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        members = [
            signature(member) if isinstance(member, ast.FunctionDef) else ast.unparse(member)
            for member in node.body
            if not isinstance(member, ast.Expr)  # docstrings
        ]
        bases = ", ".join(ast.unparse(base) for base in node.bases)
        parts += [
            f"### `{node.name}`",
            "",
            "```python",
            f"class {node.name}({bases}):",
            textwrap.indent("\n".join(members), "    "),
            "```",
            "",
            docstring_markdown(ast.get_docstring(node) or "", hook_names),
            "",
        ]
    return parts


def render(sources: dict[str, str] | None = None) -> str:
    """The whole ``hooks.md`` for the package (or for ``sources``: module name → text)."""
    package = parse("__init__", sources)
    listed = constant(package, "SECTION_MODULES")
    modules = [str(name) for name in listed] if isinstance(listed, tuple) else []
    sections = [section_of(parse(name, sources)) for name in modules]
    tree = ast.Module(body=[node for name in TYPE_MODULES for node in parse(name, sources).body],
                      type_ignores=[])
    hook_names = {hook.name for section in sections for hook in section.hooks}
    intro = docstring_markdown(ast.get_docstring(package) or "", hook_names)
    parts = [
        "<!-- Generated by scripts/gen_hook_docs.py from src/cogworker/core/hookspecs/."
        " Do not edit; run the script. -->",
        "",
        "# Hook reference",
        "",
        intro,
        "",
        "Contents:",
        "",
    ]
    for section in sections:
        links = ", ".join(f"[`{h.name}`](#{h.name})" for h in section.hooks)
        parts.append(f"- **{section.title}**: {links}")
    for section in sections:
        parts += ["", f"## {section.title}", ""]
        parts.append("\n\n".join(render_hook(hook, hook_names) for hook in section.hooks))
    types = render_types(tree, hook_names)
    if types:
        parts += ["", "## Types passed to hooks", "", *types]
    return "\n".join(parts).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    options = parser.parse_args(argv)
    content = render()
    if options.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != content:
            print(f"{OUTPUT} is out of date: run python scripts/gen_hook_docs.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(content, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
