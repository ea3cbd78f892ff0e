"""``docs/how-to/test-your-jobs.md`` is a runnable project: write its files, run its tests.

Every code block introduced by a line naming a file (`` `path/to/file.py`: ``) is written
to that path; the page's own tests must then all pass, as a user copying them would see.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

FILE_BLOCK = re.compile(r"^`(?P<path>[\w/.]+\.py)`:\n\n```python\n(?P<code>.*?)^```$",
                        re.MULTILINE | re.DOTALL)


def project_files(page: Path) -> dict[str, str]:
    return {match["path"]: match["code"] for match in FILE_BLOCK.finditer(page.read_text())}


def test_the_how_to_is_a_passing_test_suite(pytester: pytest.Pytester, docs_root: Path,
                                            redis_server_binary: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    files = project_files(docs_root / "how-to" / "test-your-jobs.md")
    assert {"myproject/jobs.py", "conftest.py", "tests/test_retry.py",
            "tests/test_cron.py", "tests/test_worker.py"} <= set(files)
    for path, code in files.items():
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)
    (pytester.path / "myproject" / "__init__.py").write_text("")
    monkeypatch.setenv("COGWORKER_REDIS_SERVER", redis_server_binary)

    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

    tests = sum(len(re.findall(r"^def test_", code, re.MULTILINE)) for code in files.values())
    result.assert_outcomes(passed=tests)
