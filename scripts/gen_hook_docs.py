"""Generate ``docs/reference/hooks.md`` from the hookspec docstrings.

The hook reference is never edited by hand: ``src/cogworker/core/hookspecs.py`` is the only
source. Hooks are grouped by the banner comments (lifecycle phases) of that module, in
source order. The module is read with ``ast``, so nothing is imported.

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
HOOKSPECS = ROOT / "src" / "cogworker" / "core" / "hookspecs.py"
OUTPUT = ROOT / "docs" / "reference" / "hooks.md"
HOOK_PREFIX = "cogworker_"

_BANNER_RULE = re.compile(r"#\s*-{10,}\s*")
_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc):`~?([^`]+)`")
_PARAM = re.compile(r":param (\w+):\s*(.*)")


@dataclass
class Section:
    """One banner-comment phase of the hookspec module and its hooks."""

    title: str
    line: int
    hooks: list[ast.FunctionDef] = field(default_factory=list)


def banner_sections(source: str) -> list[Section]:
    """Titles of ``# ----`` / ``# Title`` / ``# ----`` banners, with their line numbers."""
    lines = source.splitlines()
    sections: list[Section] = []
    for index in range(1, len(lines) - 1):
        before, title, after = lines[index - 1], lines[index].strip(), lines[index + 1]
        is_banner = _BANNER_RULE.fullmatch(before) and _BANNER_RULE.fullmatch(after)
        if is_banner and title.startswith("#") and not _BANNER_RULE.fullmatch(title):
            sections.append(Section(title.lstrip("#").strip(), index + 1))
    return sections


def group_hooks(tree: ast.Module, sections: list[Section]) -> list[Section]:
    """Put each ``cogworker_*`` spec under the last banner above it."""
    fallback = Section("Hooks", 0)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith(HOOK_PREFIX):
            above = [s for s in sections if s.line < node.lineno]
            (above[-1] if above else fallback).hooks.append(node)
    return [s for s in ([fallback] if fallback.hooks else []) + sections if s.hooks]


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


def render(source: str | None = None) -> str:
    """The whole ``hooks.md`` for ``source`` (default: the hookspec module's text)."""
    text = HOOKSPECS.read_text(encoding="utf-8") if source is None else source
    tree = ast.parse(text)
    sections = group_hooks(tree, banner_sections(text))
    hook_names = {hook.name for section in sections for hook in section.hooks}
    intro = docstring_markdown(ast.get_docstring(tree) or "", hook_names)
    parts = [
        "<!-- Generated by scripts/gen_hook_docs.py from src/cogworker/core/hookspecs.py."
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
