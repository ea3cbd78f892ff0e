"""``python -m benchmarks matrix``: the matrix of what users run, in one command.

Sections, all against one private Redis (the last one behind the delay proxy):

* processing: every system x job (one Redis round trip / no-op) x logging (as shipped /
  quiet), one worker process, N jobs queued beforehand; the no-op quiet cells also take
  today's columns (enqueue, bulk enqueue, pickup latency);
* scaling: cogworker (reliable fetch) with two worker processes against one, round-trip job,
  and cogworker-pinned (``-P 2``, each child on a CPU of its own) where it is selected;
* memory: cogworker's RSS every tenth of a long run (round-trip job, as-shipped logging);
* cold start: the first enqueue in a fresh process, per library;
* behind the delay: the round-trip job with as-shipped logging, every system.

The report goes to stdout, progress to stderr, the raw figures to a JSON file.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks import cold_start, matrix_report
from benchmarks.catalog import (
    ALL_SYSTEMS,
    BASELINE,
    JOB_KINDS,
    LOGGING_MODES,
    PINNED,
    PINNED_COGWORKER,
    SYSTEMS,
    select_systems,
)
from benchmarks.context import default_json_path, progress, versions
from benchmarks.environment import BenchEnvironment
from benchmarks.matrix_results import CellKey, Matrix
from benchmarks.measure import RunFailedError, RunPlan, run_once
from benchmarks.report import SystemRuns

SECTIONS = ("processing", "scaling", "memory", "cold-start", "delay")
MEMORY_CHECKPOINTS = 10  # the RSS is read every tenth of the memory run
PROBES, PROBE_INTERVAL = 200, 0.02

Cell = tuple[CellKey, RunPlan]


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks matrix",
        description="The benchmark matrix of issue 23: jobs with a Redis round trip, "
                    "logging as shipped, CPU per job, scaling, memory, cold start, delay.")
    parser.add_argument("--n", type=int, default=20_000, help="jobs per run (20,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per cell (3)")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help=f"comma-separated subset of: {', '.join(SYSTEMS)} (the default); "
                             f"also {', '.join(PINNED)}")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated subset of: {', '.join(SECTIONS)}")
    parser.add_argument("--delay-ms", type=float, default=1.0,
                        help="delay each way for the delay section (1)")
    parser.add_argument("--delay-n", type=int, help="jobs per run behind the delay (N / 4)")
    parser.add_argument("--memory-n", type=int, help="jobs in the memory run (5 N)")
    parser.add_argument("--cold-starts", type=int, default=7,
                        help="fresh processes per library for the cold start (7)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds any one step may take before the run fails (600)")
    parser.add_argument("--json", type=Path, help="where to write the raw figures "
                        "(default benchmarks/.results/matrix-<time>.json)")
    options = parser.parse_args(argv)
    try:
        options.selected = select_systems(options.systems)
    except ValueError as exc:
        parser.error(f"--systems: {exc}")
    options.chosen = [name.strip() for name in options.sections.split(",") if name.strip()]
    unknown = [name for name in options.chosen if name not in SECTIONS]
    if unknown or not options.chosen:
        parser.error(f"--sections: unknown {', '.join(unknown) or '(none given)'}; "
                     f"choose from {', '.join(SECTIONS)}")
    options.delay_n = options.delay_n or max(2, options.n // 4)
    options.memory_n = options.memory_n or 5 * options.n
    if min(options.n, options.delay_n) < 2 or options.memory_n < MEMORY_CHECKPOINTS:
        parser.error(f"--n and --delay-n must be at least 2, --memory-n at least "
                     f"{MEMORY_CHECKPOINTS}")
    if options.runs < 1 or options.cold_starts < 1:
        parser.error("--runs and --cold-starts must be at least 1")
    if "delay" in options.chosen and options.delay_ms <= 0:
        parser.error("--delay-ms must be above 0 for the delay section; leave the section "
                     "out with --sections to skip it")
    return options


def supervisor_available(python: str) -> bool:
    """Whether ``cogworker run`` has ``-P N`` (the supervisor of several processes)."""
    done = subprocess.run([python, "-m", "cogworker", "run", "--help"], capture_output=True,
                          text=True, check=False)
    return done.returncode == 0 and re.search(r"^\s*-P\b", done.stdout, re.MULTILINE) is not None


def _plan(options: argparse.Namespace, work_dir: Path, job: str, logging: str,
          **changes: object) -> RunPlan:
    plan = RunPlan(jobs=options.n, probes=PROBES, probe_interval=PROBE_INTERVAL,
                   timeout=options.timeout, work_dir=work_dir, python=sys.executable,
                   job=job, logging=logging, full=False)
    return dataclasses.replace(plan, **changes)  # type: ignore[arg-type]


def processing_cells(options: argparse.Namespace, work_dir: Path) -> list[Cell]:
    cells = []
    for job in JOB_KINDS:
        for logging in LOGGING_MODES:
            full = job == "noop" and logging == "quiet"  # today's table
            for system in options.selected:
                cells.append((CellKey("processing", system.name, job, logging),
                              _plan(options, work_dir, job, logging, full=full)))
    return cells


def scaling_cells(options: argparse.Namespace, work_dir: Path, supervisor: bool) -> list[Cell]:
    """One process against two, for cogworker-reliable and (with a supervisor, which hands
    each child a CPU of its own; separately started pinned processes would share CPU 0)
    cogworker-pinned, where they are selected."""
    scaled = [name for name in (BASELINE, PINNED_COGWORKER)
              if any(system.name == name for system in options.selected)
              and (name == BASELINE or supervisor)]
    return [(CellKey("scaling", name, "incr", logging, workers),
             _plan(options, work_dir, "incr", logging, workers=workers,
                   supervisor=supervisor and workers > 1))
            for name in scaled for logging in LOGGING_MODES for workers in (1, 2)]


def memory_cells(options: argparse.Namespace, work_dir: Path) -> list[Cell]:
    if all(system.name != BASELINE for system in options.selected):
        return []
    step = options.memory_n // MEMORY_CHECKPOINTS
    checkpoints = tuple(step * i for i in range(1, MEMORY_CHECKPOINTS + 1))
    return [(CellKey("memory", BASELINE, "incr", "default"),
             _plan(options, work_dir, "incr", "default", jobs=options.memory_n, fill="bulk",
                   rss_at=checkpoints))]


def delay_cells(options: argparse.Namespace, work_dir: Path) -> list[Cell]:
    return [(CellKey("delay", system.name, "incr", "default"),
             _plan(options, work_dir, "incr", "default", jobs=options.delay_n))
            for system in options.selected]


def run_cells(matrix: Matrix, cells: Sequence[Cell], env: BenchEnvironment, runs: int) -> None:
    """Every cell ``runs`` times, round-robin, so that drift hits every cell alike."""
    for key, _ in cells:
        system = ALL_SYSTEMS[key.system]
        matrix.cells.setdefault(key, SystemRuns(system, matrix.versions[key.system]))
    for number in range(1, runs + 1):
        for key, plan in cells:
            label = f"{key.label}-{number}"
            progress(f"run {number}/{runs}: {label}")
            entry = matrix.cells[key]
            try:
                result = run_once(entry.system, env, plan, label)
            except RunFailedError as exc:
                progress(f"{label} failed: {exc}")
                entry.errors.append(f"run {number}: {exc}")
                continue
            entry.add(result.metrics, result.commands)


def _direct(options: argparse.Namespace, matrix: Matrix, work_dir: Path) -> None:
    with BenchEnvironment(work_dir, 0.0) as env:
        progress(f"redis-server at {env.server.url}")
        matrix.describe_environment(env, sys.executable)
        chosen = options.chosen
        if "processing" in chosen:
            run_cells(matrix, processing_cells(options, work_dir), env, options.runs)
        if "scaling" in chosen:
            matrix.supervisor = supervisor_available(sys.executable)
            run_cells(matrix, scaling_cells(options, work_dir, matrix.supervisor), env,
                      options.runs)
        if "memory" in chosen:
            run_cells(matrix, memory_cells(options, work_dir), env, 1)
        if "cold-start" in chosen:
            progress(f"cold start: {options.cold_starts} fresh processes per library")
            try:
                matrix.cold_start = cold_start.measure(
                    options.selected, env, sys.executable, options.cold_starts, work_dir,
                    options.timeout)
            except cold_start.ColdStartError as exc:
                progress(f"cold start failed: {exc}")
                matrix.errors.append(f"cold start: {exc}")


def _delayed(options: argparse.Namespace, matrix: Matrix, work_dir: Path) -> None:
    with BenchEnvironment(work_dir, options.delay_ms) as env:
        progress(f"delay proxy at {env.url}, {options.delay_ms:g} ms each way")
        matrix.delay_round_trip_ms = env.round_trip_ms()
        run_cells(matrix, delay_cells(options, work_dir), env, options.runs)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    options = _parse(arguments)
    # SIGTERM unwinds like Ctrl-C, so workers, proxy and Redis are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    matrix = Matrix(command=["python", "-m", "benchmarks", "matrix", *arguments],
                    versions=versions(options.selected), jobs=options.n, runs=options.runs,
                    delay_ms=options.delay_ms, delay_jobs=options.delay_n,
                    memory_jobs=options.memory_n, cold_starts=options.cold_starts)
    work_dir = Path(tempfile.mkdtemp(prefix="cogworker-matrix-"))
    progress(f"work folder (worker logs; kept if a run fails): {work_dir}")
    failed = True  # until the report is out: an interrupted matrix keeps its logs too
    try:
        _direct(options, matrix, work_dir)
        if "delay" in options.chosen:
            _delayed(options, matrix, work_dir)
        failed = matrix.failed
        print(matrix_report.render(matrix, work_dir))
        json_path = options.json or default_json_path("matrix")
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(matrix.to_json(), indent=2))
        progress(f"raw figures written to {json_path}")
    finally:
        if not failed:
            shutil.rmtree(work_dir, ignore_errors=True)
    return 1 if failed else 0
