"""The benchmark harness runs end to end (cogworker only, tiny N) and prints its table.

No figure is checked: speed is shown by the benchmark itself, never asserted in a test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = ("cogworker-reliable", "cogworker-basic")
COLUMNS = (
    "system", "setup", "enqueue (jobs/s)", "bulk enqueue (jobs/s)", "processing (jobs/s)",
    "processing, boot excluded (jobs/s)", "pickup p50 (ms)", "pickup p99 (ms)",
    "worker peak RSS (MB)", "Redis commands/job",
)


def _table_rows(output: str) -> list[list[str]]:
    lines = [line for line in output.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


@pytest.mark.slow
def test_harness_prints_one_row_per_system_with_every_column(
    redis_server_binary: str, tmp_path: Path
) -> None:
    raw = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--systems", ",".join(SYSTEMS), "--n", "200",
         "--runs", "1", "--probes", "10", "--probe-interval-ms", "5", "--timeout", "60",
         "--json", str(raw)],
        cwd=ROOT, capture_output=True, text=True, timeout=110, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    header, *rows = _table_rows(done.stdout)
    assert tuple(header) == COLUMNS
    assert [row[0] for row in rows] == list(SYSTEMS)
    for row in rows:
        assert len(row) == len(COLUMNS)
        assert "failed" not in row and "-" not in row, row
    assert "Targets (cogworker-reliable):" in done.stdout

    figures = json.loads(raw.read_text())["systems"]
    assert set(figures) == set(SYSTEMS)
    assert all(len(values) == 1 for values in figures["cogworker-basic"]["metrics"].values())


@pytest.mark.slow
def test_round_trip_prints_each_loop_both_ways(redis_server_binary: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.round_trip", "--n", "50", "--runs", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _table_rows(done.stdout)
    assert rows[0] == ["loop", "how", "µs per push (wall)", "µs per push (CPU of this process)"]
    assert [row[:2] for row in rows[1:]] == [
        ["bare LPUSH loop", "reply awaited asleep in recv"],
        ["bare LPUSH loop", "reply awaited by polling"],
        ["perform_async", "push_busy_wait = 0"],
        ["perform_async", "push_busy_wait = 5e-05 (default)"],
    ]
    assert all(float(cell) > 0 for row in rows[1:] for cell in row[2:])
