"""One run of one system: enqueue rates, processing rate, CPU, pickup latency, RSS, commands.

The steps, against a flushed Redis:

1. (``full`` runs) bulk enqueue of N jobs where the library has it, timed by the client;
   flush;
2. N single enqueues from one client, timed (or, with ``fill="bulk"``, one bulk enqueue);
   these N jobs stay queued;
3. the worker(s) are started; processing ends when the counter holds all N distinct jobs.
   ``processing`` is N / (Nth job's run time - the start command); ``steady`` is
   (N - 1) / (Nth - 1st), which leaves out the worker's boot. Redis commands are read
   (INFO commandstats, reset just before the start) the moment all N are counted.
   The CPU time of the worker processes (with their children) and of Redis, and the length
   of the worker logs, are read when the harness first sees a job counted and again when
   it sees the Nth: per-job figures are the differences over the jobs counted in between,
   so the boot (imports, connecting: hundreds of ms of CPU) stays out as it does for
   ``steady``. The RSS is read as the count passes each of ``rss_at``;
4. (``full`` runs) after a second of idling, 200 probes are enqueued 20 ms apart, each
   carrying its enqueue time; pickup latency = the job's run time - that time;
5. the workers are stopped; their peak RSS (with children) was sampled all along.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from benchmarks.catalog import System
from benchmarks.counter_file import CounterFile, Record
from benchmarks.environment import BenchEnvironment, child_environment
from benchmarks.workers import WorkerGroup

POLL_INTERVAL = 0.01
LOG_FLUSH_SETTLE = 0.3
"""Seconds to wait after the last job before reading the log sizes: a buffered log handler
(cogworker's writes every 0.1 s) may still hold the last lines."""
IDLE_BEFORE_PROBES = 1.0
PROBE_MARK = 1e8  # probe arguments are Unix times, far above any job index
MIB = 2**20


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
    job: str = "noop"  # a name of catalog.JOB_KINDS
    logging: str = "quiet"  # a name of catalog.LOGGING_MODES
    full: bool = True  # also the bulk enqueue and the latency probes (today's table)
    workers: int = 1  # worker processes
    supervisor: bool = False  # one `cogworker run -P <workers>` instead of separate processes
    fill: str = "each"  # how the N jobs are queued: "each" (timed) or "bulk"
    rss_at: tuple[int, ...] = ()  # job counts at which the workers' RSS is read


@dataclass
class RunResult:
    metrics: dict[str, float] = field(default_factory=dict)
    commands: dict[str, float] = field(default_factory=dict)  # per processed job


@dataclass(frozen=True)
class Sample:
    """What the harness reads of the running workers at one moment."""

    jobs: float  # jobs counted (the mean of a count before and after the other readings)
    worker_cpu: float  # seconds
    redis_cpu: float  # seconds
    log_bytes: list[int]


@dataclass
class Watch:
    first: Sample
    last: Sample
    records: list[Record]
    rss_at: dict[int, int]


def worker_commands(system: System, plan: RunPlan) -> list[list[str]]:
    argv = system.worker_command(plan.python, plan.logging)
    if plan.workers == 1:
        return [argv]
    if plan.supervisor:
        return [[*argv, "-P", str(plan.workers)]]
    return [list(argv) for _ in range(plan.workers)]


def run_once(system: System, env: BenchEnvironment, plan: RunPlan, label: str) -> RunResult:
    """Measure ``system`` once; raises :class:`RunFailedError` when a step fails."""
    counter = CounterFile(plan.work_dir / f"{label}.counter")
    counter.reset()
    child_env = child_environment(env.url, counter.path)
    result = RunResult()
    n = plan.jobs
    if plan.full and system.bulk:
        env.flush()
        result.metrics["enqueue_bulk"] = n / _client(system, plan, child_env, "bulk", n)
    env.flush()
    action = plan.fill
    result.metrics[f"enqueue_{action}"] = n / _client(system, plan, child_env, action, n)
    commands = worker_commands(system, plan)
    logs = [plan.work_dir / (f"{label}.log" if len(commands) == 1 else f"{label}-{i}.log")
            for i in range(1, len(commands) + 1)]
    workers = WorkerGroup(commands, child_env, plan.work_dir, logs)
    env.reset_stats()
    proxy_cpu = env.proxy_cpu_seconds()
    started = time.time()
    workers.start()
    try:
        watch = _watch(counter, workers, env, plan)
        calls = env.command_calls()
        if proxy_cpu is not None:  # share of one core the proxy used while jobs ran
            used = (env.proxy_cpu_seconds() or 0.0) - proxy_cpu
            result.metrics["proxy_cpu"] = used / (time.time() - started)
        _check_round_trips(env, plan)
        result.metrics.update(_processing_metrics(watch, workers, started, n))
        result.metrics["commands"] = sum(calls.values()) / n
        result.commands = {name: count / n for name, count in calls.items()}
        if plan.full:
            time.sleep(IDLE_BEFORE_PROBES)
            latencies = _probe(system, plan, child_env, counter, workers)
            result.metrics["pickup_p50"] = _percentile(latencies, 0.50) * 1000
            result.metrics["pickup_p99"] = _percentile(latencies, 0.99) * 1000
    finally:
        workers.stop()
    result.metrics["peak_rss"] = workers.peak_rss / MIB
    return result


def _processing_metrics(watch: Watch, workers: WorkerGroup, started: float,
                        n: int) -> dict[str, float]:
    ran = sorted(r.ran_at for r in watch.records if r.argument < PROBE_MARK)
    metrics = {
        "process_total": n / (ran[-1] - started),
        "process_steady": (n - 1) / (ran[-1] - ran[0]) if n > 1 else math.nan,
    }
    first, last = watch.first, watch.last
    jobs = last.jobs - first.jobs
    if jobs > 0:
        metrics["worker_cpu_us"] = (last.worker_cpu - first.worker_cpu) / jobs * 1e6
        metrics["redis_cpu_us"] = (last.redis_cpu - first.redis_cpu) / jobs * 1e6
        lines = workers.log_lines_between(first.log_bytes, last.log_bytes)
        metrics["log_lines"] = lines / jobs
        metrics["log_bytes"] = (sum(last.log_bytes) - sum(first.log_bytes)) / jobs
    for count, rss in watch.rss_at.items():
        metrics[f"rss_at_{count}"] = rss / MIB
    return metrics


def _check_round_trips(env: BenchEnvironment, plan: RunPlan) -> None:
    """The round-trip job counts its INCRs in Redis: all N must have made theirs."""
    if plan.job != "incr":
        return
    done = env.round_trips()
    if done < plan.jobs:
        raise RunFailedError(f"{plan.jobs} round-trip jobs ran but only {done} INCRs reached "
                             "Redis: the job's own connection is not the harness's Redis")


def _client(system: System, plan: RunPlan, env: dict[str, str], action: str, count: int,
            *extra: str) -> float:
    """Run the client subprocess; returns the seconds it reports."""
    argv = [plan.python, "-m", "benchmarks.client", system.module, action, str(count),
            "--job", plan.job, *extra]
    try:
        done = subprocess.run(argv, env=env, cwd=plan.work_dir, capture_output=True, text=True,
                              timeout=plan.timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RunFailedError(f"{action} enqueue did not finish in {plan.timeout:g}s") from None
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-10:])
        raise RunFailedError(f"{action} enqueue exited {done.returncode}:\n{tail}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def _sample(counter: CounterFile, workers: WorkerGroup, env: BenchEnvironment) -> Sample:
    before = counter.count()
    worker_cpu = workers.cpu_seconds()
    redis_cpu = env.cpu_seconds()
    log_bytes = workers.log_bytes()
    return Sample((before + counter.count()) / 2, worker_cpu, redis_cpu, log_bytes)


def _watch(counter: CounterFile, workers: WorkerGroup, env: BenchEnvironment,
           plan: RunPlan) -> Watch:
    """Wait until jobs 0..n-1 have all run, reading the workers on the way."""
    n = plan.jobs
    deadline = time.monotonic() + plan.timeout
    first: Sample | None = None
    pending = sorted(plan.rss_at)
    rss_at: dict[int, int] = {}
    while time.monotonic() < deadline:
        count = counter.count()
        if first is None and count >= 1:
            first = _sample(counter, workers, env)
        while pending and count >= pending[0]:
            rss_at[pending.pop(0)] = workers.current_rss()
        if count >= n and first is not None:
            last = _sample(counter, workers, env)
            records = counter.records()
            if len({r.argument for r in records if r.argument < PROBE_MARK}) >= n:
                # a buffered log handler (cogworker's flushes every 0.1 s) may still hold
                # the last jobs' lines: read the log sizes once they are out
                time.sleep(LOG_FLUSH_SETTLE)
                last = replace(last, log_bytes=workers.log_bytes())
                return Watch(first, last, records, rss_at)
        if workers.exit_code is not None:
            raise RunFailedError(
                f"a worker exited with code {workers.exit_code} after "
                f"{counter.count()} of {n} jobs; its log ends:\n{workers.log_tail()}")
        time.sleep(POLL_INTERVAL)
    raise RunFailedError(f"only {counter.count()} of {n} jobs ran within {plan.timeout:g}s; "
                         f"the worker log ends:\n{workers.log_tail()}")


def _probe(system: System, plan: RunPlan, env: dict[str, str], counter: CounterFile,
           workers: WorkerGroup) -> list[float]:
    """Send the latency probes and return their pickup latencies in seconds."""
    _client(system, plan, env, "paced", plan.probes, "--interval", str(plan.probe_interval))
    deadline = time.monotonic() + plan.timeout
    while time.monotonic() < deadline:
        probes = [r for r in counter.records() if r.argument >= PROBE_MARK]
        if len(probes) >= plan.probes:
            return [r.ran_at - r.argument for r in probes]
        if workers.exit_code is not None:
            raise RunFailedError(f"a worker exited with code {workers.exit_code} during "
                                 f"the latency probes; its log ends:\n{workers.log_tail()}")
        time.sleep(POLL_INTERVAL)
    raise RunFailedError(f"latency probes did not all run within {plan.timeout:g}s")


def _percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]
