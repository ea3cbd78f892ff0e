"""The benchmark harness runs end to end (cogworker only, tiny N) and prints its table.

No figure is checked: speed is shown by the benchmark itself, never asserted in a test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
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


def _run_benchmark(module: str, *options: str, timeout: float = 60,
                   redis_server: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m module options`` from the repository root; ``redis_server`` is the
    binary its private Redis runs (``COGWORKER_REDIS_SERVER``)."""
    env = None if redis_server is None else {**os.environ,
                                             "COGWORKER_REDIS_SERVER": redis_server}
    return subprocess.run([sys.executable, "-m", module, *options], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.slow
def test_harness_prints_one_row_per_system_with_every_column(
    redis_server_binary: str, tmp_path: Path
) -> None:
    raw = tmp_path / "figures.json"
    done = _run_benchmark(
        "benchmarks", "--systems", ",".join(SYSTEMS), "--n", "200", "--runs", "1", "--probes",
        "10", "--probe-interval-ms", "5", "--timeout", "60", "--json", str(raw), timeout=110)
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
    done = _run_benchmark("benchmarks.round_trip", "--n", "50", "--runs", "1")
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


def test_log_lines_prints_every_way_of_both_formats() -> None:
    done = _run_benchmark("benchmarks.log_lines", "--n", "200", "--runs", "1",
                          "--threads", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _table_rows(done.stdout)
    assert rows[0] == ["format", "way", "CPU µs per job (both lines)"]
    assert [row[:2] for row in rows[1:]] == [
        ["text", "logging.StreamHandler, a record per line (before)"],
        ["text", "BufferedLineHandler alone: the fast path (as shipped)"],
        ["text", "BufferedLineHandler + a user's handler: logger.info"],
        ["text", "the job logger at WARNING: no line"],
        ["json", "logging.StreamHandler, a record per line (before)"],
        ["json", "BufferedLineHandler alone: the fast path (as shipped)"],
        ["json", "BufferedLineHandler + a user's handler: logger.info"],
    ]
    assert all(float(row[2]) >= 0 for row in rows[1:])


def test_log_lines_refuses_zero_threads() -> None:
    done = _run_benchmark("benchmarks.log_lines", "--threads", "0")
    assert done.returncode == 2
    assert "--threads must be at least 1" in done.stderr


MATRIX_PROCESSING_TABLES = (
    "#### Round-trip job (one INCR), logging as shipped",
    "#### Round-trip job (one INCR), quiet logging (WARNING)",
    "#### No-op job, logging as shipped",
    "#### No-op job, quiet logging (WARNING)",
)
MATRIX_COLUMNS = (
    "system", "setup", "processing, boot excluded (jobs/s)", "worker CPU (µs/job)",
    "Redis CPU (µs/job)", "Redis commands/job", "log lines/job", "peak RSS (MiB)",
)


def _table_after(output: str, heading: str) -> list[list[str]]:
    """The rows of the first Markdown table after ``heading``."""
    rest = output.split(heading, 1)[1].lstrip("\n").splitlines()
    table = []
    for line in rest:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table
            if not line.startswith("|---")]


MATRIX_TIMEOUT = 400
"""Seconds a whole-matrix smoke run may take: about 85 s on an idle 2-core machine, over 170
s on CI with the other legs beside it (each of its 12 cells starts, drains and stops a worker)."""


def _run_matrix(*options: str,
                timeout: float = MATRIX_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return _run_benchmark("benchmarks", "matrix", *options, timeout=timeout)


@pytest.mark.slow
@pytest.mark.timeout(MATRIX_TIMEOUT + 20)
def test_matrix_runs_every_section_for_one_system(redis_server_binary: str,
                                                  tmp_path: Path) -> None:
    raw = tmp_path / "matrix.json"
    done = _run_matrix("--systems", "cogworker-reliable", "--n", "200", "--runs", "1",
                       "--delay-n", "50", "--memory-n", "500", "--cold-starts", "1",
                       "--timeout", "60", "--json", str(raw))
    assert done.returncode == 0, done.stdout + done.stderr

    for heading in MATRIX_PROCESSING_TABLES:
        header, *rows = _table_after(done.stdout, heading)
        assert tuple(header) == MATRIX_COLUMNS
        assert [row[0] for row in rows] == ["cogworker-reliable"]
        assert "failed" not in rows[0] and "-" not in rows[0], rows
    lines_shipped = _table_after(done.stdout, MATRIX_PROCESSING_TABLES[0])[1][6]
    assert float(lines_shipped) > 0, "logging as shipped wrote no per-job lines"
    scaling = _table_after(done.stdout, "### Scaling")
    assert [row[:3] for row in scaling[1:]] == [
        ["cogworker-reliable", logging, workers]
        for logging in ("default", "quiet") for workers in ("1", "2")]
    assert scaling[2][4].startswith("x"), scaling  # the 2-process ratio
    memory = _table_after(done.stdout, "### Memory")
    assert memory[0][1:] == [f"{count:,}" for count in range(50, 501, 50)]
    assert len(memory[1]) == 11 and memory[1][0] == "RSS (MiB)"
    cold = _table_after(done.stdout, "### Cold start")
    assert [row[0] for row in cold[1:]] == ["cogworker"]
    delay = _table_after(done.stdout, "### Behind 1 ms each way")
    assert [row[0] for row in delay[1:]] == ["cogworker-reliable"]
    assert "### Targets of issue 23" in done.stdout

    figures = json.loads(raw.read_text())
    sections = sorted(cell["section"] for cell in figures["cells"])
    assert sections == ["delay", "memory"] + ["processing"] * 4 + ["scaling"] * 4
    assert all(not cell["errors"] for cell in figures["cells"])
    assert set(figures["cold_start_seconds"]) == {"cogworker"}


@pytest.mark.slow
@pytest.mark.timeout(MATRIX_TIMEOUT + 20)
def test_matrix_scales_the_pinned_worker_under_the_supervisor(redis_server_binary: str,
                                                              tmp_path: Path) -> None:
    done = _run_matrix("--systems", "cogworker-pinned", "--sections", "scaling", "--n", "200",
                       "--runs", "1", "--timeout", "60", "--json", str(tmp_path / "m.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    scaling = _table_after(done.stdout, "### Scaling")
    assert [row[:3] for row in scaling[1:]] == [
        ["cogworker-pinned", logging, workers]
        for logging in ("default", "quiet") for workers in ("1", "2")]
    assert "2 processes = one `cogworker run -P 2`" in done.stdout
    assert "- (cogworker-pinned, -P 2 against one pinned process: " in done.stdout


@pytest.mark.parametrize(("options", "message"), [
    (("--sections", "processing,bogus"), "--sections: unknown bogus"),
    (("--systems", "sidekiq"), "--systems: unknown sidekiq"),
    (("--delay-ms", "0"), "--delay-ms must be above 0 for the delay section"),
    (("--memory-n", "5"), "--memory-n at least 10"),
])
def test_matrix_rejects_bad_options_with_usage_error(options: tuple[str, ...],
                                                     message: str) -> None:
    done = _run_matrix(*options, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr


@pytest.mark.slow
def test_plugin_cost_prints_a_row_per_variant(redis_server_binary: str) -> None:
    done = _run_benchmark("benchmarks.plugin_cost", "--variant", "metrics", "--n", "200",
                          "--runs", "1", "--timeout", "60", timeout=110)
    assert done.returncode == 0, done.stdout + done.stderr

    header, *rows = _table_rows(done.stdout)
    assert header[0] == "plugins on" and "Redis commands/job" in header
    assert [row[0] for row in rows] == ["off", "metrics"]
    assert all("failed" not in row for row in rows)


def test_plugin_cost_needs_a_variant() -> None:
    done = _run_benchmark("benchmarks.plugin_cost")
    assert done.returncode == 2
    assert "--variant" in done.stderr


@pytest.mark.slow
def test_the_batches_benchmark_prints_its_three_rows(redis_server_binary: str) -> None:
    done = _run_benchmark("benchmarks.batches", "--n", "200", "--size", "50", "--runs", "1",
                          timeout=110, redis_server=redis_server_binary)
    assert done.returncode == 0, done.stdout + done.stderr

    header, *rows = _table_rows(done.stdout)
    assert header[0] == "jobs" and "run: settle round trips/job" in header
    assert [row[0] for row in rows] == ["outside a batch, plugin off", "outside a batch",
                                        "in batches"]
    assert rows[0][5] == rows[1][5] == "0.000"  # no settle outside a batch


@pytest.mark.slow
def test_the_workflows_benchmark_prints_its_three_rows(redis_server_binary: str) -> None:
    done = _run_benchmark("benchmarks.workflows", "--n", "200", "--length", "10",
                          "--width", "50", "--runs", "1", timeout=110,
                          redis_server=redis_server_binary)
    assert done.returncode == 0, done.stdout + done.stderr

    header, *rows = _table_rows(done.stdout)
    assert header[0] == "jobs" and "run: EVALSHA/job" in header
    assert [row[0] for row in rows] == ["plain jobs", "chain steps (10 a chain)",
                                        "chord members (50 a chord)"]
    evalsha = header.index("run: EVALSHA/job")
    assert float(rows[1][evalsha]) > float(rows[0][evalsha])  # one finishing script a step
@pytest.mark.parametrize("tool", ["cpu", "cprofile"])
def test_hot_path_prints_the_figure_per_job(redis_server_binary: str, tool: str,
                                            tmp_path: Path) -> None:
    done = _run_benchmark("benchmarks.hot_path", "--n", "50", "--runs", "1",
                          "--plugins", "status,history", "--tool", tool,
                          "--keep", str(tmp_path), timeout=110)
    assert done.returncode == 0, done.stdout + done.stderr

    assert "plugins=status,history n=50 runs=1" in done.stdout
    assert "CPU µs per job: median " in done.stdout
    if tool == "cprofile":  # every thread's share is in the worker's log, and the profile
        log = (tmp_path / "full-0.log").read_text()
        assert "thread cogworker-processor:" in log
        assert (tmp_path / "full-0.pstats").stat().st_size > 0


def test_hot_path_refuses_zero_jobs() -> None:
    done = _run_benchmark("benchmarks.hot_path", "--n", "0")
    assert done.returncode == 2
    assert "--n" in done.stderr


@pytest.mark.slow
def test_the_thread_floor_prints_a_row_unpinned_and_a_row_pinned(
    redis_server_binary: str,
) -> None:
    done = _run_benchmark("benchmarks.thread_floor", "--n", "200", "--runs", "1",
                          "--threads", "3", timeout=120, redis_server=redis_server_binary)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 threads, 200 jobs, 1 run(s) each" in done.stdout
    header, *rows = _table_rows(done.stdout)
    assert header == ["threads on", "CPU µs per job", "jobs/s", "context switches per job"]
    assert [row[0] for row in rows] == ["every CPU (unpinned)", "one CPU (pinned)"]
    assert all(float(row[2].replace(",", "")) > 0 for row in rows)


def test_the_thread_floor_refuses_zero_threads() -> None:
    done = _run_benchmark("benchmarks.thread_floor", "--threads", "0")
    assert done.returncode == 2
    assert "--threads" in done.stderr


def test_the_run_script_parses_and_each_subcommand_names_a_benchmark_module() -> None:
    script = ROOT / "benchmarks" / "run"
    subprocess.run(["bash", "-n", str(script)], check=True)  # a missing `fi` fails here
    modules = re.findall(r"-m (benchmarks(?:\.\w+)?)", script.read_text())
    assert len(modules) >= 8
    for module in modules:
        assert importlib.util.find_spec(module) is not None, module


@pytest.mark.slow
def test_the_memory_probe_prints_a_row_per_probe_and_the_lines_that_grew(
    redis_server_binary: str,
) -> None:
    done = _run_benchmark("benchmarks.memory_probe", "--n", "600", "--checkpoints", "3",
                          "--tracemalloc", timeout=110, redis_server=redis_server_binary)
    assert done.returncode == 0, done.stdout + done.stderr

    header, *rows = _table_rows(done.stdout)
    assert header[:3] == ["jobs queued before the probe", "RSS (MiB)", "GC-tracked objects"]
    assert "tracemalloc traced (MiB)" in header
    assert [row[0] for row in rows] == ["200", "400", "600"]
    assert all(float(row[1]) > 10 for row in rows)  # a worker's RSS, in MiB
    assert "From the first probe to the last: RSS (MiB) " in done.stdout
    assert ("Source lines whose traced memory grew most" in done.stdout
            or "No source line's traced memory grew." in done.stdout)


@pytest.mark.parametrize("options", [("--checkpoints", "1"), ("--n", "5", "--checkpoints", "6"),
                                     ("--frames", "0")])
def test_the_memory_probe_rejects_bad_options_with_usage_error(options: tuple[str, ...]) -> None:
    done = _run_benchmark("benchmarks.memory_probe", *options)
    assert done.returncode == 2
    assert "usage:" in done.stderr
