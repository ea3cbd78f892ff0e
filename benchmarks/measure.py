"""One run of one system: enqueue rates, processing rate, pickup latency, RSS, commands.

The steps, against a flushed Redis:

1. bulk enqueue of N jobs (where the library has it), timed by the client; flush;
2. N single enqueues from one client, timed; these N jobs stay queued;
3. the worker is started; processing ends when the counter holds all N distinct jobs.
   ``processing`` is N / (Nth job's run time - the start command); ``steady`` is
   (N - 1) / (Nth - 1st), which leaves out the worker's boot. Redis commands are read
   (INFO commandstats, reset just before the start) the moment all N are counted;
4. after a second of idling, 200 probes are enqueued 20 ms apart, each carrying its enqueue
   time; pickup latency = the job's run time - that time;
5. the worker is stopped; its peak RSS (with children) was sampled all along.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.counter import CounterFile, Record
from benchmarks.environment import BenchEnvironment, child_environment
from benchmarks.systems import System
from benchmarks.workers import WorkerProcess

POLL_INTERVAL = 0.01
IDLE_BEFORE_PROBES = 1.0
PROBE_MARK = 1e8  # probe arguments are Unix times, far above any job index


class RunFailedError(Exception):
    """A step of a run did not finish; the message says which and why."""


@dataclass(frozen=True)
class RunPlan:
    jobs: int
    probes: int
    probe_interval: float
    timeout: float  # seconds any one step may take
    work_dir: Path
    python: str


@dataclass
class RunResult:
    metrics: dict[str, float] = field(default_factory=dict)
    commands: dict[str, float] = field(default_factory=dict)  # per processed job


def run_once(system: System, env: BenchEnvironment, plan: RunPlan, label: str) -> RunResult:
    """Measure ``system`` once; raises :class:`RunFailedError` when a step fails."""
    counter = CounterFile(plan.work_dir / f"{label}.counter")
    counter.reset()
    child_env = child_environment(env.url, counter.path)
    result = RunResult()
    n = plan.jobs
    if system.bulk:
        env.flush()
        result.metrics["enqueue_bulk"] = n / _client(system, plan, child_env, "bulk", n)
    env.flush()
    result.metrics["enqueue_each"] = n / _client(system, plan, child_env, "each", n)
    worker = WorkerProcess(system.worker_command(plan.python), child_env, plan.work_dir,
                           plan.work_dir / f"{label}.log")
    env.reset_stats()
    proxy_cpu = env.proxy_cpu_seconds()
    started = time.time()
    worker.start()
    try:
        records = _wait_for_jobs(counter, worker, n, plan.timeout)
        calls = env.command_calls()
        if proxy_cpu is not None:  # share of one core the proxy used while jobs ran
            used = (env.proxy_cpu_seconds() or 0.0) - proxy_cpu
            result.metrics["proxy_cpu"] = used / (time.time() - started)
        ran = sorted(r.ran_at for r in records if r.argument < PROBE_MARK)
        result.metrics["process_total"] = n / (ran[-1] - started)
        result.metrics["process_steady"] = (n - 1) / (ran[-1] - ran[0]) if n > 1 else math.nan
        result.metrics["commands"] = sum(calls.values()) / n
        result.commands = {name: count / n for name, count in calls.items()}
        time.sleep(IDLE_BEFORE_PROBES)
        latencies = _probe(system, plan, child_env, counter, worker, n)
        result.metrics["pickup_p50"] = _percentile(latencies, 0.50) * 1000
        result.metrics["pickup_p99"] = _percentile(latencies, 0.99) * 1000
    finally:
        worker.stop()
    result.metrics["peak_rss"] = worker.peak_rss / 2**20
    return result


def _client(system: System, plan: RunPlan, env: dict[str, str], action: str, count: int,
            *extra: str) -> float:
    """Run the client subprocess; returns the seconds it reports."""
    argv = [plan.python, "-m", "benchmarks.client", system.module, action, str(count), *extra]
    try:
        done = subprocess.run(argv, env=env, cwd=plan.work_dir, capture_output=True, text=True,
                              timeout=plan.timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RunFailedError(f"{action} enqueue did not finish in {plan.timeout:g}s") from None
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-10:])
        raise RunFailedError(f"{action} enqueue exited {done.returncode}:\n{tail}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def _wait_for_jobs(counter: CounterFile, worker: WorkerProcess, n: int,
                   timeout: float) -> list[Record]:
    """Wait until jobs 0..n-1 have all run; returns every record so far."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if counter.count() >= n:
            records = counter.records()
            ran = {r.argument for r in records if r.argument < PROBE_MARK}
            if len(ran) >= n:
                return records
        if worker.exit_code is not None:
            raise RunFailedError(
                f"the worker exited with code {worker.exit_code} after "
                f"{counter.count()} of {n} jobs; its log ends:\n{worker.log_tail()}")
        time.sleep(POLL_INTERVAL)
    raise RunFailedError(f"only {counter.count()} of {n} jobs ran within {timeout:g}s; "
                         f"the worker log ends:\n{worker.log_tail()}")


def _probe(system: System, plan: RunPlan, env: dict[str, str], counter: CounterFile,
           worker: WorkerProcess, n: int) -> list[float]:
    """Send the latency probes and return their pickup latencies in seconds."""
    _client(system, plan, env, "paced", plan.probes, "--interval", str(plan.probe_interval))
    deadline = time.monotonic() + plan.timeout
    while time.monotonic() < deadline:
        probes = [r for r in counter.records() if r.argument >= PROBE_MARK]
        if len(probes) >= plan.probes:
            return [r.ran_at - r.argument for r in probes]
        if worker.exit_code is not None:
            raise RunFailedError(f"the worker exited with code {worker.exit_code} during "
                                 f"the latency probes; its log ends:\n{worker.log_tail()}")
        time.sleep(POLL_INTERVAL)
    raise RunFailedError(f"latency probes did not all run within {plan.timeout:g}s")


def _percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]
