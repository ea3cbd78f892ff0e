"""``python -m benchmarks.web`` keeps working: a tiny run in which every page answers 200
(the benchmark stops at the first page that does not)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_dashboard_benchmark_runs(redis_server_binary: str) -> None:
    result = subprocess.run([sys.executable, "-m", "benchmarks.web", "--jobs", "400",
                             "--history", "3000", "--runs", "1"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert "| `/jobs?q=TimeoutError` |" in result.stdout, result.stdout + result.stderr
    assert "| `/history?error=declined` |" in result.stdout
    assert result.stdout.count("\n| `/") == 49  # every page and fragment measured
    assert "Slowest single answer:" in result.stdout  # ran to the end (its exit status
    # says whether the limit held: a timing, which a test does not judge)
