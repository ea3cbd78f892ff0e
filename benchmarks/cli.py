"""``python -m benchmarks``: measure every selected system, print one Markdown report.

Progress goes to stderr, the report to stdout, and the raw figures to a JSON file under
``benchmarks/.results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import psutil

from benchmarks import report
from benchmarks.environment import BenchEnvironment, repository_root
from benchmarks.measure import RunFailedError, RunPlan, run_once
from benchmarks.systems import BASELINE, SYSTEMS, System

RESULTS_DIR = repository_root() / "benchmarks" / ".results"


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
    names = [name.strip() for name in options.systems.split(",") if name.strip()]
    unknown = [name for name in names if name not in SYSTEMS]
    if unknown or not names:
        parser.error(f"--systems: unknown {', '.join(unknown) or '(none given)'}; "
                     f"choose from {', '.join(SYSTEMS)}")
    if options.n < 2 or options.runs < 1 or options.probes < 1:
        parser.error("--n must be at least 2, --runs and --probes at least 1")
    options.selected = [SYSTEMS[name] for name in names]
    return options


def _versions(systems: Sequence[System]) -> dict[str, str]:
    versions = {}
    for system in systems:
        try:
            versions[system.name] = metadata.version(system.distribution)
        except metadata.PackageNotFoundError:
            raise SystemExit(
                f"{system.distribution} is not installed, so {system.name} cannot run: use "
                "benchmarks/run (it installs the bench extra in a virtualenv of its own), "
                "pip install -e '.[bench]', or leave it out with --systems") from None
    return versions


def _progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _measure(options: argparse.Namespace, env: BenchEnvironment, work_dir: Path,
             versions: dict[str, str]) -> list[report.SystemRuns]:
    runs = [report.SystemRuns(system, versions[system.name]) for system in options.selected]
    plan = RunPlan(jobs=options.n, probes=options.probes,
                   probe_interval=options.probe_interval_ms / 1000, timeout=options.timeout,
                   work_dir=work_dir, python=sys.executable)
    for number in range(1, options.runs + 1):  # round-robin: drift hits every system alike
        for entry in runs:
            label = f"{entry.system.name}-{number}"
            _progress(f"run {number}/{options.runs}: {entry.system.name}")
            try:
                result = run_once(entry.system, env, plan, label)
            except RunFailedError as exc:
                _progress(f"{label} failed: {exc}")
                entry.errors.append(f"run {number}: {exc}")
                continue
            entry.add(result.metrics, result.commands)
    return runs


def _header(options: argparse.Namespace, env: BenchEnvironment, argv: Sequence[str]) -> str:
    delay = f"{options.delay_ms:g} ms each way (proxy)" if options.delay_ms else "none"
    rtt = env.round_trip_ms()
    command = shlex.join(["python", "-m", "benchmarks", *argv])
    memory = psutil.virtual_memory().total / 2**30
    return "\n".join([
        f"Command: `{command}`",
        f"Machine: {_cpu_model()} ({platform.machine()}), {_cpu_count()} CPUs, "
        f"{memory:.0f} GiB RAM, {platform.system()} {platform.release()}",
        f"Python {platform.python_version()}, Redis {env.redis_version()}, "
        f"redis-py {metadata.version('redis')}; N = {options.n:,} jobs, {options.runs} "
        f"run(s) each, network delay: {delay}; PING round trip as the systems see it: "
        f"{rtt:.2f} ms (median)",
        "",
        "Cells: median [min-max] over the runs (ratio to cogworker-reliable's median).",
    ])


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 0


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
    versions = _versions(options.selected)
    work_dir = Path(tempfile.mkdtemp(prefix="cogworker-bench-"))
    failed = False
    try:
        with BenchEnvironment(work_dir, options.delay_ms) as env:
            _progress(f"redis-server at {env.server.url}, systems connect to {env.url}")
            runs = _measure(options, env, work_dir, versions)
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
        json_path = options.json or RESULTS_DIR / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
        _write_json(json_path, runs, header)
        _progress(f"raw figures written to {json_path}")
    finally:
        if not failed:
            shutil.rmtree(work_dir, ignore_errors=True)
    return 1 if failed else 0
