"""``python -m benchmarks``: measure every selected system, print one Markdown report.

Progress goes to stderr, the report to stdout, and the raw figures to a JSON file under
``benchmarks/.results/``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from benchmarks import report
from benchmarks.catalog import BASELINE, SYSTEMS, select_systems
from benchmarks.context import commit_line, default_json_path, machine_line, progress, versions
from benchmarks.environment import BenchEnvironment
from benchmarks.measure import RunFailedError, RunPlan, run_once


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmark cogworker and its peers against one private Redis.")
    parser.add_argument("--n", type=int, default=20_000, help="jobs per run (default 20,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per system (default 3)")
    parser.add_argument("--systems", default=",".join(SYSTEMS),
                        help=f"comma-separated subset of: {', '.join(SYSTEMS)}")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="delay each way between everyone and Redis, through a local "
                             "TCP proxy (default 0: direct)")
    parser.add_argument("--probes", type=int, default=200, help="latency probes (default 200)")
    parser.add_argument("--probe-interval-ms", type=float, default=20.0,
                        help="time between latency probes (default 20)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds any one step may take before the run fails (300)")
    parser.add_argument("--json", type=Path, help="where to write the raw figures "
                        "(default benchmarks/.results/bench-<time>.json)")
    options = parser.parse_args(argv)
    try:
        options.selected = select_systems(options.systems)
    except ValueError as exc:
        parser.error(f"--systems: {exc}")
    if options.n < 2 or options.runs < 1 or options.probes < 1:
        parser.error("--n must be at least 2, --runs and --probes at least 1")
    return options


def _measure(options: argparse.Namespace, env: BenchEnvironment, work_dir: Path,
             found: dict[str, str]) -> list[report.SystemRuns]:
    runs = [report.SystemRuns(system, found[system.name]) for system in options.selected]
    plan = RunPlan(jobs=options.n, probes=options.probes,
                   probe_interval=options.probe_interval_ms / 1000, timeout=options.timeout,
                   work_dir=work_dir, python=sys.executable)
    for number in range(1, options.runs + 1):  # round-robin: drift hits every system alike
        for entry in runs:
            label = f"{entry.system.name}-{number}"
            progress(f"run {number}/{options.runs}: {entry.system.name}")
            try:
                result = run_once(entry.system, env, plan, label)
            except RunFailedError as exc:
                progress(f"{label} failed: {exc}")
                entry.errors.append(f"run {number}: {exc}")
                continue
            entry.add(result.metrics, result.commands)
    return runs


def _header(options: argparse.Namespace, env: BenchEnvironment, argv: Sequence[str]) -> str:
    delay = f"{options.delay_ms:g} ms each way (proxy)" if options.delay_ms else "none"
    rtt = env.round_trip_ms()
    command = shlex.join(["python", "-m", "benchmarks", *argv])
    return "\n".join([
        f"Command: `{command}`",
        commit_line(),
        machine_line(),
        f"Python {platform.python_version()}, Redis {env.redis_version()}, "
        f"redis-py {metadata.version('redis')}; N = {options.n:,} jobs, {options.runs} "
        f"run(s) each, network delay: {delay}; PING round trip as the systems see it: "
        f"{rtt:.2f} ms (median)",
        "",
        "Cells: median [min-max] over the runs (ratio to cogworker-reliable's median).",
    ])


def _write_json(path: Path, runs: Sequence[report.SystemRuns], header: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"header": header, "systems": {
        r.system.name: {"version": r.version, "setup": r.system.setup, "metrics": r.metrics,
                        "commands": r.commands, "errors": r.errors} for r in runs}}
    path.write_text(json.dumps(data, indent=2))


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    options = _parse(arguments)
    # SIGTERM unwinds like Ctrl-C, so workers, proxy and Redis are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    found = versions(options.selected)
    work_dir = Path(tempfile.mkdtemp(prefix="cogworker-bench-"))
    failed = False
    try:
        with BenchEnvironment(work_dir, options.delay_ms) as env:
            progress(f"redis-server at {env.server.url}, systems connect to {env.url}")
            runs = _measure(options, env, work_dir, found)
            header = _header(options, env, arguments)
        failed = any(r.errors for r in runs)
        sections = [header, report.render_table(runs, BASELINE),
                    "Redis commands per processed job, by command (INFO commandstats; "
                    "commands run inside Lua scripts count too):",
                    report.render_commands(runs), "Targets (cogworker-reliable):",
                    report.render_targets(runs, BASELINE)]
        if failed:
            sections += [f"Failed runs (worker logs kept in {work_dir}):",
                         report.render_errors(runs)]
        print("\n\n".join(sections))
        json_path = options.json or default_json_path("bench")
        _write_json(json_path, runs, header)
        progress(f"raw figures written to {json_path}")
    finally:
        if not failed:
            shutil.rmtree(work_dir, ignore_errors=True)
    return 1 if failed else 0
