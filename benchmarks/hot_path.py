"""``benchmarks/run hot-path``: what one job costs cogworker's worker, in CPU or instructions.

Queues N jobs (bulk), then runs ``cogworker run --burst`` (reliable fetch, 10 threads, the
benchmark's app) until the queue is empty, and reads what the worker process used: its CPU
time (``wait4``'s rusage) or, with ``--tool cachegrind``, the instructions it ran
(valgrind; repeatable on a loaded machine, where CPU times are not). A run with no job
gives the fixed cost of starting and stopping, so the figure per job is
``(run with N jobs - run with none) / N``::

    benchmarks/run hot-path --n 5000 --runs 3                         # CPU µs per job
    benchmarks/run hot-path --n 2000 --runs 1 --tool cachegrind       # instructions per job
    benchmarks/run hot-path --plugins metrics,status,history          # with these plugins on
    benchmarks/run hot-path --tool cprofile --n 5000                  # where it goes
    benchmarks/run hot-path --cpu-affinity auto                       # pinned to one CPU

``--plugins`` lists the plugins on beside the defaults (``no:NAME`` turns a default off);
``--job incr`` (default) makes one Redis round trip per job, ``noop`` none; ``--logging
default`` writes the as-shipped ``start``/``done`` lines (to a file), ``quiet`` is WARNING.
``--tool cprofile`` profiles every thread of the worker (:mod:`benchmarks.thread_profile`)
and prints the functions with the most own time.
"""

from __future__ import annotations

import argparse
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.context import machine_line
from benchmarks.environment import BenchEnvironment, child_environment, repository_root
from benchmarks.systems.cogworker_app import PLUGINS_ENV

APP = "benchmarks.systems.cogworker_app:app"
TOOLS = ("cpu", "cachegrind", "callgrind", "cprofile")
USAGES: list[resource.struct_rusage] = []
"""What every worker run so far used (``wait4``'s rusage), in order: empty, full, empty..."""


def worker_argv(python: str, plugins: Sequence[str], logging: str,
                cpu_affinity: str | None = None) -> list[str]:
    level = ["--log-level", "WARNING"] if logging == "quiet" else []
    extra = [part for name in plugins for part in ("--plugin", name)]
    pinning = ["--cpu-affinity", cpu_affinity] if cpu_affinity else []
    return ["run", "-A", APP, "-c", "10", "--burst", *level, *extra, *pinning]


def queue_jobs(python: str, env: dict[str, str], count: int, job: str) -> None:
    if count:
        subprocess.run([python, "-m", "benchmarks.client", "benchmarks.systems.cogworker_app",
                        "bulk", str(count), "--job", job], env=env, check=True,
                       capture_output=True, cwd=repository_root())


def run_worker(argv: list[str], env: dict[str, str], log: Path) -> float:
    """Run ``argv`` to its end; the CPU seconds it used (user + system; the system part
    all it used is also added to :data:`USAGES`)."""
    with log.open("ab") as out:
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=out,
                                   cwd=repository_root())
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise SystemExit(f"the worker exited {process.returncode}:\n{tail}")
    USAGES.append(usage)
    return usage.ru_utime + usage.ru_stime


def instructions(out_file: Path) -> int:
    """The total of a cachegrind output file (its ``summary:`` line)."""
    for line in out_file.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no summary line in {out_file}")


def one_run(env_: BenchEnvironment, options: argparse.Namespace, count: int,
            work: Path, label: str) -> float:
    """Queue ``count`` jobs and run the worker over them; CPU seconds or instructions."""
    env_.flush()
    env = child_environment(env_.url, work / "counter")
    env[PLUGINS_ENV] = ",".join(name for name in options.plugins if ":" not in name)
    env["PYTHONHASHSEED"] = "0"  # instruction counts move about 2 % with the hash seed
    queue_jobs(options.python, env, count, options.job)
    cli = worker_argv(options.python, options.plugins, options.logging, options.cpu_affinity)
    log = work / f"{label}.log"
    if options.tool == "cachegrind":
        out = work / f"{label}.cachegrind"
        run_worker(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                    f"--cachegrind-out-file={out}", options.python, "-m", "cogworker", *cli],
                   env, log)
        return float(instructions(out))
    if options.tool == "callgrind":  # one output file per thread: where the instructions go
        out = work / f"{label}.callgrind"
        run_worker(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                    f"--callgrind-out-file={out}", options.python, "-m", "cogworker", *cli],
                   env, log)
        parts = sorted(path for path in work.glob(f"{label}.callgrind-*"))
        per_thread = [instructions(part) for part in parts]
        print(f"{label}: instructions per thread (creation order): "
              f"{', '.join(f'{count:,}' for count in per_thread)}", file=sys.stderr)
        return float(sum(per_thread))
    if options.tool == "cprofile":
        out = work / f"{label}.pstats"
        seconds = run_worker([options.python, "-m", "benchmarks.thread_profile", str(out),
                              "--", *cli], env, log)
        if count:
            stats = pstats.Stats(str(out))
            stats.sort_stats("tottime").print_stats(45)
            stats.sort_stats("cumulative").print_stats(60)
        return seconds
    return run_worker([options.python, "-m", "cogworker", *cli], env, log)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmarks/run hot-path", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5000, help="jobs per run (5,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each size (3)")
    parser.add_argument("--plugins", default="", help="comma-separated, beside the defaults")
    parser.add_argument("--job", default="incr", choices=("incr", "noop"))
    parser.add_argument("--logging", default="default", choices=("default", "quiet"))
    parser.add_argument("--tool", default="cpu", choices=TOOLS)
    parser.add_argument("--cpu-affinity", metavar="off|auto|LIST",
                        help="the worker's --cpu-affinity (default: the setting's default)")
    parser.add_argument("--keep", metavar="DIR", help="keep the logs and profiles in DIR")
    options = parser.parse_args(argv)
    options.plugins = [name.strip() for name in options.plugins.split(",") if name.strip()]
    options.python = sys.executable
    if options.n < 1 or options.runs < 1:
        parser.error("--n and --runs must be at least 1")
    return options


def _per_job(figure: Callable[[resource.struct_rusage], float],
             options: argparse.Namespace) -> list[float]:
    """``figure`` of each full run less that of the empty run before it, per job."""
    return [(figure(USAGES[2 * run + 1]) - figure(USAGES[2 * run])) / options.n
            for run in range(options.runs)]


def main(argv: Sequence[str] | None = None) -> None:
    options = _parse(sys.argv[1:] if argv is None else argv)
    counts = options.tool in ("cachegrind", "callgrind")
    unit = "instructions" if counts else "CPU µs"
    scale = 1.0 if counts else 1e6
    with tempfile.TemporaryDirectory(prefix="cogworker-hot-path-") as folder:
        work = Path(options.keep or folder)
        work.mkdir(parents=True, exist_ok=True)
        with BenchEnvironment(work, delay_ms=0) as env_:
            empty, full = [], []
            for run in range(options.runs):
                empty.append(one_run(env_, options, 0, work, f"empty-{run}"))
                full.append(one_run(env_, options, options.n, work, f"full-{run}"))
                print(f"run {run + 1}: {full[-1] * scale:,.0f} with {options.n} jobs, "
                      f"{empty[-1] * scale:,.0f} with none", file=sys.stderr)
    per_job = [(f - e) * scale / options.n for f, e in zip(full, empty, strict=True)]
    system = _per_job(lambda usage: usage.ru_stime * 1e6, options)
    print(f"{machine_line()}")
    print(f"hot path: job={options.job} logging={options.logging} "
          f"plugins={','.join(options.plugins) or '(defaults)'} n={options.n} "
          f"runs={options.runs} tool={options.tool}")
    print(f"{unit} per job: median {statistics.median(per_job):,.1f} "
          f"[{min(per_job):,.1f}-{max(per_job):,.1f}]")
    if options.tool == "cpu":
        switches = _per_job(lambda usage: usage.ru_nvcsw + usage.ru_nivcsw, options)
        print(f"of which system CPU µs per job: median {statistics.median(system):,.1f}")
        print(f"context switches per job: median {statistics.median(switches):,.1f} "
              f"[{min(switches):,.1f}-{max(switches):,.1f}]")


if __name__ == "__main__":
    main()
