"""``benchmarks/run thread-floor``: what the round-trip job costs with no queue at all.

The matrix's round-trip job is one ``INCR`` (redis-py) and one counter record. Here the
same job runs with no framework: ``--threads`` threads (10, a worker's default concurrency)
take the jobs from an in-process queue and run them, in a fresh process, once free to run
on every CPU and once pinned to one (``os.sched_setaffinity``), alternating, ``--runs``
times each. It prints the median CPU time per job (the process's own, every thread), jobs
a second and context switches per job (``getrusage``).

That is the floor under any threaded Python worker on this machine: what the job's own
system calls cost when each of them hands the interpreter lock to a thread on another CPU,
against what they cost when all threads share one CPU
(docs/explanation/performance.md)::

    benchmarks/run thread-floor --n 20000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.context import machine_line
from benchmarks.environment import BenchEnvironment, child_environment, repository_root

MODES = ("unpinned", "pinned")


def _child(url: str, count: int, threads: int, mode: str) -> None:
    """(In the measured process.) Run ``count`` jobs on ``threads`` threads; print JSON."""
    import redis

    from benchmarks.counter import record
    from benchmarks.systems import ROUND_TRIP_KEY

    if mode == "pinned":
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    client = redis.Redis.from_url(url)
    client.ping()
    jobs: queue.SimpleQueue[float | None] = queue.SimpleQueue()
    for number in range(count):
        jobs.put(float(number))
    for _ in range(threads):
        jobs.put(None)

    def work() -> None:
        while (argument := jobs.get()) is not None:
            client.incr(ROUND_TRIP_KEY)
            record(argument)

    before, cpu_before, started = resource.getrusage(resource.RUSAGE_SELF), \
        time.process_time(), time.perf_counter()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_before
    after = resource.getrusage(resource.RUSAGE_SELF)
    switches = (after.ru_nvcsw + after.ru_nivcsw) - (before.ru_nvcsw + before.ru_nivcsw)
    print(json.dumps({"cpu_us": cpu / count * 1e6, "rate": count / elapsed,
                      "switches": switches / count}))


def _run(url: str, options: argparse.Namespace, mode: str, counter: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-m", "benchmarks.thread_floor", "--child", url,
                           str(options.n), str(options.threads), mode],
                          env=child_environment(url, counter), cwd=repository_root(),
                          capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(done.stdout.splitlines()[-1]))


def _report(results: dict[str, list[dict[str, float]]], options: argparse.Namespace) -> None:
    print(machine_line())
    print(f"thread floor: one INCR and one counter record per job, no framework; "
          f"{options.threads} threads, {options.n:,} jobs, {options.runs} run(s) each\n")
    print("| threads on | CPU µs per job | jobs/s | context switches per job |")
    print("|---|---|---|---|")
    for mode in MODES:
        rows = results[mode]
        cpu = [row["cpu_us"] for row in rows]
        rate = statistics.median(row["rate"] for row in rows)
        switches = statistics.median(row["switches"] for row in rows)
        where = "every CPU (unpinned)" if mode == "unpinned" else "one CPU (pinned)"
        print(f"| {where} | {statistics.median(cpu):.0f} [{min(cpu):.0f}-{max(cpu):.0f}] "
              f"| {rate:,.0f} | {switches:.1f} |")


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmarks/run thread-floor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20_000, help="jobs per run (20,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each mode (3)")
    parser.add_argument("--threads", type=int, default=10, help="job threads (10)")
    options = parser.parse_args(argv)
    if options.n < 1 or options.runs < 1 or options.threads < 1:
        parser.error("--n, --runs and --threads must be at least 1")
    if not hasattr(os, "sched_setaffinity"):
        parser.error("needs Linux (os.sched_setaffinity) to pin the pinned runs")
    return options


def main(argv: Sequence[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["--child"]:
        url, count, threads, mode = arguments[1:5]
        _child(url, int(count), int(threads), mode)
        return
    options = _parse(arguments)
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="cogworker-thread-floor-") as folder:
        work = Path(folder)
        with BenchEnvironment(work, delay_ms=0.0) as env:
            for number in range(options.runs):
                for mode in MODES:
                    counter = work / f"counter-{mode}-{number}"
                    results[mode].append(_run(env.url, options, mode, counter))
    _report(results, options)


if __name__ == "__main__":
    main()
