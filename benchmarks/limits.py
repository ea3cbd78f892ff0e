"""``benchmarks/run limits``: what the ``limits`` plugin costs, with and without limits.

Against one private redis-server (no persistence), two parts:

1. **Jobs with no limits**, plugin on (the default) vs off (``--plugin no:limits``): a
   worker (the ``Launcher``, in this process, 10 threads) runs N queued no-op jobs; Redis
   commands per job (INFO commandstats, Lua's inner calls included, boot and idle beats
   amortised) and this process's CPU per job; after a warm-up run (the first run of a
   process is slower), ``--rounds`` runs of each, alternated, and their medians.
2. **A concurrency-limited class** on 2 worker processes x 10 threads: N jobs that sleep
   ``--sleep-ms``, once unlimited and once declared ``concurrent("bench", --limit)``;
   Redis commands per job, the workers' CPU per job (both processes, from their rusage),
   and the achieved concurrency from a ledger of start/end times outside Redis (the
   average number running over the run, and the most at once) against the limit.

Usage: ``benchmarks/run limits [--n 3000] [--limited-n 100] [--limit 4] [--sleep-ms 200]
[--backoff 0.5] [--max-backoff 10]`` (the back-off defaults are the plugin's); under a
minute on 2 cores. The report is Markdown on stdout. The back-off decides the trade: a
short one keeps the slots busier and costs more commands (each refusal is a fetch, an
acquire and a reschedule).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import cogworker
from benchmarks.context import commit_line, machine_line
from benchmarks.environment import BenchEnvironment
from cogworker.plugins.limits.options import LimitsOptions
from cogworker.worker.launcher import Launcher

NAMESPACE = "bench-limits"
WORKER_APP = """
import os
import time

import cogworker

app = cogworker.App(redis_url=os.environ["BENCH_REDIS_URL"], namespace="{namespace}",
                    plugin_options={{"limits": {{"backoff": float(os.environ["BENCH_BACKOFF"]),
                                                 "max_backoff": float(os.environ["BENCH_MAX"])}}}})
LEDGER = os.environ["BENCH_LEDGER"]
SLEEP = float(os.environ["BENCH_SLEEP"])
LIMIT = int(os.environ["BENCH_LIMIT"])


def note(started, ended):
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{{started:.6f}} {{ended:.6f}}\\n".encode())
    finally:
        os.close(fd)


def sleepy():
    started = time.time()
    time.sleep(SLEEP)
    note(started, time.time())


@app.job(name="Unlimited")
def unlimited():
    sleepy()


@app.job(name="Limited", limits=[app.limiter.concurrent("bench", LIMIT)])
def limited():
    sleepy()
"""


def calls(env: BenchEnvironment) -> int:
    return sum(env.command_calls().values())


# part 1: jobs with no limits ------------------------------------------------------------


def unlimited_run(env: BenchEnvironment, count: int, plugin_on: bool,
                  limited: bool = False) -> tuple[float, float]:
    """Commands and this process's CPU µs per job for ``count`` no-op jobs; ``limited``:
    each declares a concurrent limit no run reaches (the cost of taking and giving back a
    slot, with no refusal)."""
    env.flush()
    plugins = () if plugin_on else ("no:limits",)
    app = cogworker.App(redis_url=env.url, namespace=NAMESPACE, concurrency=10,
                        plugins=plugins)
    done, lock, ran = threading.Event(), threading.Lock(), [0]

    limits = [app.limiter.concurrent("roomy", 1000)] if limited else None

    @app.job(name="Noop", **({"limits": limits} if limits else {}))
    def noop() -> None:
        with lock:
            ran[0] += 1
            if ran[0] >= count:
                done.set()

    app.push_bulk("Noop", [[] for _ in range(count)])
    env.reset_stats()
    cpu = time.process_time()
    launcher = Launcher(app)
    thread = threading.Thread(target=launcher.run)
    thread.start()
    assert done.wait(300), "the jobs did not all run"
    cpu = time.process_time() - cpu
    commands = calls(env)
    launcher.request_stop()
    thread.join(60)
    app.close()
    return commands / count, cpu * 1e6 / count


# part 2: a concurrency-limited class ---------------------------------------------------


def fleet_run(env: BenchEnvironment, work: Path, job: str, options: argparse.Namespace
              ) -> dict[str, float]:
    """``--limited-n`` jobs of ``job`` on 2 worker processes x 10 threads."""
    count, limit, sleep = options.limited_n, options.limit, options.sleep_ms / 1000
    env.flush()
    ledger = work / f"{job}.ledger"
    ledger.unlink(missing_ok=True)
    child_env = {**os.environ, "BENCH_REDIS_URL": env.url, "BENCH_LEDGER": str(ledger),
                 "BENCH_SLEEP": str(sleep), "BENCH_LIMIT": str(limit),
                 "BENCH_BACKOFF": str(options.backoff), "BENCH_MAX": str(options.max_backoff),
                 "PYTHONPATH": f"{work}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                 "COGWORKER_POLL_INTERVAL": "0.1", "COGWORKER_LOG_LEVEL": "WARNING"}
    pusher = cogworker.App(redis_url=env.url, namespace=NAMESPACE)
    for start in range(0, count, 1000):
        for _ in range(min(1000, count - start)):
            pusher.push({"class": job, "args": []})
    pusher.close()
    env.reset_stats()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers = [subprocess.Popen([sys.executable, "-m", "cogworker", "run", "-A",
                                 "benchapp:app", "-c", "10"], env=child_env, cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for _ in range(2)]
    deadline = time.monotonic() + 300
    while _lines(ledger) < count:
        assert time.monotonic() < deadline, f"only {_lines(ledger)} of {count} {job} ran"
        time.sleep(0.05)
    commands = calls(env)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.wait(60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    spans = [tuple(map(float, line.split())) for line in ledger.read_text().splitlines()]
    return {"commands": commands / count, "cpu_us": cpu * 1e6 / count,
            **_concurrency(spans)}  # type: ignore[arg-type]


def _median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return (statistics.median(run[0] for run in runs),
            statistics.median(run[1] for run in runs))


def _lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def _concurrency(spans: Sequence[tuple[float, float]]) -> dict[str, float]:
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    busy = sum(end - start for start, end in spans)
    return {"average": busy / wall, "peak": float(peak), "rate": len(spans) / wall}


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmarks/run limits",
                                     description="What the limits plugin costs per job.")
    parser.add_argument("--n", type=int, default=3000, help="no-op jobs in part 1 (3000)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="part 1: alternated off/on runs after a warm-up; medians (3)")
    parser.add_argument("--limited-n", type=int, default=100,
                        help="jobs per class in part 2 (100)")
    parser.add_argument("--limit", type=int, default=4, help="the concurrency limit (4)")
    parser.add_argument("--sleep-ms", type=float, default=200.0,
                        help="how long each part-2 job sleeps (200 ms, an API call)")
    parser.add_argument("--backoff", type=float, default=LimitsOptions().backoff,
                        help="plugin_options.limits.backoff in the workers (the default)")
    parser.add_argument("--max-backoff", type=float, default=LimitsOptions().max_backoff,
                        help="plugin_options.limits.max_backoff in the workers (the default)")
    options = parser.parse_args(argv)
    if options.n < 10 or options.limited_n < 10 or options.limit < 1:
        parser.error("--n and --limited-n must be at least 10, --limit at least 1")
    return options


def main(argv: Sequence[str] | None = None) -> int:
    options = _parse(list(sys.argv[1:] if argv is None else argv))
    with tempfile.TemporaryDirectory(prefix="cogworker-limits-bench-") as directory:
        work = Path(directory)
        (work / "benchapp.py").write_text(textwrap.dedent(WORKER_APP.format(
            namespace=NAMESPACE)), encoding="utf-8")
        with BenchEnvironment(work, 0.0) as env:
            unlimited_run(env, options.n, plugin_on=True)  # warm-up: the first run is slower
            rounds: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            for _ in range(options.rounds):  # alternated, so that drift hits both alike
                for plugin_on in (False, True):
                    rounds[plugin_on].append(unlimited_run(env, options.n, plugin_on))
            off, on = (_median(rounds[False]), _median(rounds[True]))
            roomy = _median([unlimited_run(env, options.n, True, limited=True)
                             for _ in range(options.rounds)])
            plain = fleet_run(env, work, "Unlimited", options)
            limited = fleet_run(env, work, "Limited", options)
            version = env.redis_version()
    print(f"Command: `benchmarks/run limits {' '.join(sys.argv[1:])}`")
    print(commit_line())
    print(machine_line())
    print(f"Redis {version}\n")
    print(f"Jobs with no limits ({options.n:,} no-op jobs, one worker, 10 threads; median of "
          f"{options.rounds} alternated runs after a warm-up run):\n")
    print("| limits plugin | Redis commands/job | worker CPU/job (µs) |")
    print("|---|---|---|")
    print(f"| off (`--plugin no:limits`) | {off[0]:.3f} | {off[1]:,.0f} |")
    print(f"| on (the default) | {on[0]:.3f} | {on[1]:,.0f} |")
    print(f"| on, each job declaring `concurrent(\"roomy\", 1000)` (never full) | "
          f"{roomy[0]:.3f} | {roomy[1]:,.0f} |")
    print(f"\nA class of {options.limited_n} jobs sleeping {options.sleep_ms:g} ms, 2 worker "
          f"processes x 10 threads, back-off {options.backoff:g} s doubling up to "
          f"{options.max_backoff:g} s:\n")
    print("| class | Redis commands/job | workers' CPU/job (µs) | jobs/s | average running "
          "| most at once |")
    print("|---|---|---|---|---|---|")
    for label, row in (("unlimited", plain), (f"concurrent(\"bench\", {options.limit})",
                                              limited)):
        print(f"| {label} | {row['commands']:.2f} | {row['cpu_us']:,.0f} | {row['rate']:,.0f} "
              f"| {row['average']:.2f} | {row['peak']:.0f} |")
    print(f"\nOverhead of the limit: {limited['commands'] - plain['commands']:+.2f} commands/job, "
          f"{limited['cpu_us'] - plain['cpu_us']:+,.0f} µs of worker CPU per job; achieved "
          f"concurrency {limited['average']:.2f} of a limit of {options.limit} "
          f"({limited['average'] / options.limit:.0%}), never above it "
          f"(most at once: {limited['peak']:.0f}).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
