"""``benchmarks/run plugin-cost``: what turning plugins on costs cogworker's worker.

Runs cogworker (reliable fetch) with the round-trip job and as-shipped logging, once with
the plugins off and once per ``--variant`` with them on (``--plugin NAME`` for each name),
round-robin over ``--runs``, against one private Redis, and prints one Markdown table:
processing rate (jobs/s), Redis commands per job while the worker runs (INFO commandstats,
Lua included), worker CPU per job, each variant's ratio to the plugins-off rate, and the
enqueue rate of the client that queued the jobs beforehand, one ``perform_async`` each,
with the same plugins on (what push-side writes cost shows there)::

    benchmarks/run plugin-cost --variant metrics
    benchmarks/run plugin-cost --variant metrics --variant metrics,status,history

The switch is generic: any installed plugin name works, so the combined measurement of the
observability plugins is one more ``--variant``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.catalog import BASELINE, SYSTEMS, System, _cogworker
from benchmarks.context import commit_line, machine_line, progress
from benchmarks.environment import BenchEnvironment
from benchmarks.measure import RunFailedError, RunPlan, RunResult, run_once

OFF = "off"
PLUGINS_ENV = "BENCH_COGWORKER_PLUGINS"  # read by benchmarks.systems.cogworker_app


def variant_system(plugins: Sequence[str]) -> System:
    """cogworker-reliable with ``--plugin NAME`` for each of ``plugins``."""
    base = SYSTEMS[BASELINE]
    if not plugins:
        return base
    extra = [part for name in plugins for part in ("--plugin", name)]
    return dataclasses.replace(base, name=f"{BASELINE}+{','.join(plugins)}",
                               worker_args=_cogworker(*extra))


def run_variant(plugins: Sequence[str], env: BenchEnvironment, plan: RunPlan,
                label: str) -> RunResult:
    """One run with ``plugins`` on in the worker (``--plugin``) and in the client that
    enqueues (the app reads :data:`PLUGINS_ENV`), so push-side writes are measured too."""
    os.environ[PLUGINS_ENV] = ",".join(plugins)
    try:
        return run_once(variant_system(plugins), env, plan, label)
    finally:
        del os.environ[PLUGINS_ENV]


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/run plugin-cost",
        description="cogworker's processing rate and Redis commands per job with plugins "
                    "off and on (round-trip job, as-shipped logging).")
    parser.add_argument("--variant", action="append", default=[], metavar="NAMES",
                        help="comma-separated plugins to turn on (repeatable)")
    parser.add_argument("--n", type=int, default=20_000, help="jobs per run (20,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per variant (3)")
    parser.add_argument("--job", default="incr", choices=("incr", "noop"),
                        help="incr: one Redis round trip per job (default); noop")
    parser.add_argument("--logging", default="default", choices=("default", "quiet"),
                        help="default: as shipped, a start and a done line per job")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds any one step may take (600)")
    options = parser.parse_args(argv)
    options.variants = [[n.strip() for n in text.split(",") if n.strip()]
                        for text in options.variant]
    if not options.variants or any(not names for names in options.variants):
        parser.error("give at least one --variant with plugin names, e.g. --variant metrics")
    if options.n < 2 or options.runs < 1:
        parser.error("--n must be at least 2 and --runs at least 1")
    return options


def _row(label: str, results: list[dict[str, float]], base_rate: float | None) -> str:
    if not results:
        return f"| {label} | failed | | | | |"
    rate = statistics.median(r["process_total"] for r in results)
    enqueue = statistics.median(r["enqueue_each"] for r in results)
    commands = statistics.median(r["commands"] for r in results)
    cpu = statistics.median(r.get("worker_cpu_us", 0.0) for r in results)
    low, high = min(r["process_total"] for r in results), max(r["process_total"] for r in results)
    ratio = "1.00" if base_rate is None else f"{rate / base_rate:.2f}"
    return (f"| {label} | {rate:,.0f} [{low:,.0f}-{high:,.0f}] | {ratio} | {commands:.2f} "
            f"| {cpu:,.0f} | {enqueue:,.0f} |")


def main(argv: Sequence[str] | None = None) -> int:
    options = _parse(list(sys.argv[1:] if argv is None else argv))
    # SIGTERM unwinds like Ctrl-C, so workers and Redis are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    variants: list[list[str]] = [[], *options.variants]
    results: dict[str, list[dict[str, float]]] = {",".join(v) or OFF: [] for v in variants}
    commands: dict[str, list[dict[str, float]]] = {label: [] for label in results}
    work_dir = Path(tempfile.mkdtemp(prefix="cogworker-plugin-cost-"))
    plan = RunPlan(jobs=options.n, probes=1, probe_interval=0.02, timeout=options.timeout,
                   work_dir=work_dir, python=sys.executable, job=options.job,
                   logging=options.logging, full=False)
    failed = False
    with BenchEnvironment(work_dir, 0.0) as env:
        for number in range(1, options.runs + 1):
            for plugins in variants:
                label = ",".join(plugins) or OFF
                progress(f"run {number}/{options.runs}: plugins {label}")
                try:
                    run = run_variant(plugins, env, plan, f"{label}-{number}")
                except RunFailedError as exc:
                    progress(f"plugins {label}, run {number} failed: {exc}")
                    failed = True
                    continue
                results[label].append(run.metrics)
                commands[label].append(run.commands)
        version = env.redis_version()
    base = results[OFF]
    base_rate = statistics.median(r["process_total"] for r in base) if base else None
    print(f"Command: `benchmarks/run plugin-cost {' '.join(sys.argv[1:])}`")
    print(commit_line())
    print(machine_line())
    print(f"Redis {version}; N = {options.n:,} jobs, {options.runs} run(s) each, job "
          f"{options.job}, logging {options.logging}; cogworker-reliable, 10 threads\n")
    print("| plugins on | processing (jobs/s) median [min-max] | rate vs off | "
          "Redis commands/job | worker CPU/job (µs) | enqueue (jobs/s) |")
    print("|---|---|---|---|---|---|")
    for plugins in variants:
        label = ",".join(plugins) or OFF
        print(_row(label, results[label], None if not plugins else base_rate))
    print("\nRedis commands per job that differ from plugins off (median of the runs):\n")
    for plugins in options.variants:
        label = ",".join(plugins)
        print(f"- {label}: {_command_changes(commands[label], commands[OFF]) or 'none'}")
    return 1 if failed else 0


def _median_by_command(runs: list[dict[str, float]]) -> dict[str, float]:
    names = {name for run in runs for name in run}
    return {name: statistics.median(run.get(name, 0.0) for run in runs) for name in names}


def _command_changes(variant: list[dict[str, float]], off: list[dict[str, float]]) -> str:
    """``hincrby +0.004, evalsha +0.001`` for the commands whose count per job changed."""
    if not variant or not off:
        return ""
    on, base = _median_by_command(variant), _median_by_command(off)
    changes = sorted(((on.get(name, 0.0) - base.get(name, 0.0), name)
                      for name in set(on) | set(base)), reverse=True)
    return ", ".join(f"{name} {delta:+.4f}" for delta, name in changes if abs(delta) >= 0.0005)


if __name__ == "__main__":
    sys.exit(main())
