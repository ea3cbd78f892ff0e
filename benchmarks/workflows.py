"""``benchmarks/run workflows``: what a job costs as a workflow step compared with a plain job.

Runs a private redis-server on a unix socket in a temporary directory, then, round-robin
over ``--runs``, starts N jobs three ways: plain pushes, chains of ``--length`` steps, and
chords of ``--width`` members (plus their callback); and runs a real worker (the
``Launcher``, in this process, 10 threads) until all N have run. Reported per job: Redis
commands to start them (INFO commandstats, every ``redis.call`` inside Lua counted),
commands while the worker runs them (heartbeats and start/stop included), EVALSHA calls,
and wall and CPU microseconds.

Usage: ``python -m benchmarks.workflows [--n 2000] [--length 10] [--width 100] [--runs 3]``
(about 30 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

import cogworker
from benchmarks.batches import commands
from benchmarks.private_redis import private_server, run_worker_until
from cogworker.core.job import JobFunction
from cogworker.workflows import chain, chord, group

NAMESPACE = "measure"
KINDS = ("plain", "chain", "chord")


@dataclass
class Bench:
    app: cogworker.App
    step: JobFunction[..., int]
    reduce: JobFunction[..., int]


def make_app(url: str, done: threading.Event, count: int) -> Bench:
    app = cogworker.App(redis_url=url, namespace=NAMESPACE, concurrency=10)
    ran = [0]
    lock = threading.Lock()

    @app.job(name="Step")
    def step(value: int = 0) -> int:
        with lock:
            ran[0] += 1
            if ran[0] >= count:
                done.set()
        return value + 1

    @app.job(name="Reduce")
    def reduce(values: list[int]) -> int:
        """A chord's callback: not counted as one of the N jobs."""
        return sum(values)

    return Bench(app, step, reduce)


def start_all(bench: Bench, kind: str, options: argparse.Namespace) -> None:
    step, count = bench.step, options.n
    if kind == "plain":
        for _ in range(count):
            step.perform_async(0)
    elif kind == "chain":
        for _ in range(count // options.length):
            chain(step.s(0), *(step.s() for _ in range(options.length - 1))).apply_async()
    else:
        for _ in range(count // options.width):
            chord(group(*(step.s(0) for _ in range(options.width))),
                  bench.reduce.s()).apply_async()


def measure(client: redis.Redis, url: str, kind: str,
            options: argparse.Namespace) -> dict[str, float]:
    count = options.n
    done = threading.Event()
    bench = make_app(url, done, count)
    client.config_resetstat()
    started = time.perf_counter()
    start_all(bench, kind, options)
    pushed = time.perf_counter() - started
    push_calls = sum(commands(client).values()) - 1  # the INFO itself
    client.config_resetstat()
    elapsed, cpu = run_worker_until(bench.app, done)
    stats = commands(client)
    bench.app.close()
    return {"push_commands": push_calls / count, "push_us": pushed / count * 1e6,
            "commands": (sum(stats.values()) - 1) / count,
            "evalsha": stats.get("evalsha", 0) / count, "us": elapsed / count * 1e6,
            "cpu_us": cpu / count * 1e6}


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmarks/run workflows", description=__doc__)
    parser.add_argument("--n", type=int, default=2000, help="jobs per measurement (2000)")
    parser.add_argument("--length", type=int, default=10, help="steps per chain (10)")
    parser.add_argument("--width", type=int, default=100, help="members per chord (100)")
    parser.add_argument("--runs", type=int, default=3, help="rounds; medians shown (3)")
    options = parser.parse_args(argv)
    if min(options.length, options.width, options.runs) < 1 or \
            options.n % options.length or options.n % options.width:
        parser.error("--n must be a multiple of --length and --width, each at least 1")
    return options


def report(options: argparse.Namespace, rows: dict[str, list[dict[str, float]]]) -> None:
    def median(kind: str, name: str) -> float:
        return statistics.median(row[name] for row in rows[kind])

    print(f"Command: `benchmarks/run workflows {' '.join(sys.argv[1:])}`")
    print(f"N = {options.n:,} jobs, chains of {options.length}, chords of {options.width}, "
          f"{options.runs} round(s), medians; worker: Launcher in-process, 10 threads\n")
    print("| jobs | start: commands/job | start: µs/job | run: commands/job | "
          "run: EVALSHA/job | run: wall µs/job | run: CPU µs/job |")
    print("|---|---|---|---|---|---|---|")
    labels: dict[str, Any] = {"plain": "plain jobs", "chain": f"chain steps ({options.length} a "
                              "chain)", "chord": f"chord members ({options.width} a chord)"}
    for kind in KINDS:
        print(f"| {labels[kind]} | {median(kind, 'push_commands'):.2f} | "
              f"{median(kind, 'push_us'):.0f} | {median(kind, 'commands'):.2f} | "
              f"{median(kind, 'evalsha'):.3f} | {median(kind, 'us'):.0f} | "
              f"{median(kind, 'cpu_us'):.0f} |")


def main(argv: Sequence[str] | None = None) -> int:
    options = _parse(list(sys.argv[1:] if argv is None else argv))
    rows: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    with private_server() as (client, url):
        for number in range(options.runs):
            for kind in KINDS:
                print(f"round {number + 1}: {kind}", file=sys.stderr)
                rows[kind].append(measure(client, url, kind, options))
    report(options, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
