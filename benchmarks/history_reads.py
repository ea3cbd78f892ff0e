"""How fast the run history answers the Web UI: 50,000 records in a private redis-server.

    python -m benchmarks.history_reads            # 50,000 records, 30 repetitions a read
    python -m benchmarks.history_reads --records 5000 --repeat 5

Fills the history the way the ``history`` plugin does (batches of 1,000 through
``HistoryStore.append``: one script a batch, trims included), then times each read the
dashboard makes, median and 95th percentile of ``--repeat`` calls, each a fresh round trip
over loopback. Also prints what a record costs to write (Redis commands, from INFO
commandstats, which counts the script's own calls) and to keep (``used_memory``), and the
CPU the plugin adds to each job in the worker (process time of its middleware and the
record's JSON, around a job that does nothing). Only
loopback: the server is started here and stopped afterwards.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import redis

from cogworker.api.history import History
from cogworker.core.broker import HISTORY, HistoryRecord, HistoryRetention
from cogworker.core.middleware import JobContext
from cogworker.plugins.history.options import HistoryOptions
from cogworker.plugins.history.recorder import HistoryRecorder
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer

CLASSES = [f"app.jobs.Job{n:02d}" for n in range(20)]
QUEUES = ["default", "mailers", "billing", "low"]
BATCH = 1000


def make_records(count: int, seed: int = 7) -> list[HistoryRecord]:
    """``count`` runs over the last day: 20 classes, 4 queues, 1 in 10 failed (with a
    20-line backtrace), jobs retried under the same jid now and then."""
    rng = random.Random(seed)
    now_ms = int(time.time() * 1000)
    records = []
    jid = ""
    for n in range(count):
        if n % 7 or not jid:
            jid = f"{rng.getrandbits(96):024x}"
        failed = rng.random() < 0.1
        duration_us = int(rng.lognormvariate(9, 1.5))
        finished = now_ms - (count - n) * 1000
        records.append(HistoryRecord(
            run_id=f"{rng.getrandbits(64):016x}", jid=jid, job_class=rng.choice(CLASSES),
            queue=rng.choice(QUEUES), status="failed" if failed else "success",
            started_ms=finished - duration_us // 1000, finished_ms=finished,
            duration_us=duration_us, args=f'[{n},"user-{n % 977}",{{"plan":"pro"}}]',
            error_class="ValueError" if failed else None,
            error_message="card declined" if failed else None,
            backtrace=tuple(f'  File "app/jobs.py", line {i}, in step_{i}' for i in range(20))
            if failed else ()))
    return records


def script_usec(client: redis.Redis) -> int:
    """Microseconds Redis spent in scripts (EVALSHA, its calls included) since the reset."""
    stats: dict[str, Any] = client.info("commandstats")
    return sum(int(entry["usec"]) for name, entry in stats.items()
               if name in ("cmdstat_evalsha", "cmdstat_eval"))


def commands(client: redis.Redis) -> int:
    stats: dict[str, Any] = client.info("commandstats")
    return sum(int(entry["calls"]) for name, entry in stats.items()
               if name not in ("cmdstat_info",))


def timed(call: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median and p95 of ``repeat`` calls, in milliseconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


class _Discard:
    """A history store that only serializes what it is given (the worker-side cost)."""

    def append(self, records: Sequence[HistoryRecord], retention: HistoryRetention) -> None:
        for record in records:
            record.to_json()


class _Running:
    running = True

    def flush_soon(self) -> None:
        pass


def worker_cost(jobs: int = 50_000) -> float:
    """CPU microseconds the plugin adds to one job in the worker: the middleware around a
    job that does nothing, and the record's JSON at flush (process time, not wall time)."""
    recorder = HistoryRecorder(_Discard(), HistoryOptions(max_buffered=jobs))  # type: ignore[arg-type]
    recorder.flusher = _Running()  # type: ignore[assignment]
    job = {"class": "benchmarks.systems.cogworker_app.noop", "args": [1234.5],
           "queue": "default", "jid": "0123456789abcdef01234567", "retry": True}
    ctx = JobContext(app=None, job=job, queue="default", raw="{}",  # type: ignore[arg-type]
                     definition=None)
    started = time.process_time()
    for _ in range(jobs):
        recorder.middleware(ctx, lambda: None)
    recorder.flush()
    return (time.process_time() - started) / jobs * 1_000_000


def run(count: int, repeat: int) -> list[tuple[str, str, str]]:
    with tempfile.TemporaryDirectory() as work, RedisServer(
            Path(work) / "redis", appendonly=False, extra_args=("--save", "")) as server:
        client = redis.Redis.from_url(server.url)
        broker = RedisBroker(client, KeySchema("bench"))
        history = History(broker)
        store = broker.extension(HISTORY)
        assert store is not None
        records = make_records(count)
        keep = HistoryRetention(max_age=30 * 86400, max_entries=count, daily_ttl=400 * 86400)
        memory_before = int(client.info("memory")["used_memory"])
        client.config_resetstat()
        started = time.perf_counter()
        for first in range(0, count, BATCH):
            store.append(records[first:first + BATCH], keep)
        fill_seconds = time.perf_counter() - started
        per_record = commands(client) / count
        redis_us = script_usec(client) / count
        memory = (int(client.info("memory")["used_memory"]) - memory_before) / count
        client.config_resetstat()
        store.append(make_records(BATCH, seed=8), keep)  # a full history: trims as it writes
        trimming = commands(client) / BATCH
        trimming_us = script_usec(client) / BATCH
        sample = records[count // 2]
        reads: dict[str, Callable[[], object]] = {
            "first page (25, newest first)": history.page,
            "page 200 by offset (25)": lambda: history.page(offset=25 * 199),
            "class filter, first page": lambda: history.page(job_class=CLASSES[3]),
            "class filter, slowest first": lambda: history.page(job_class=CLASSES[3],
                                                                sort="duration"),
            "failed in the last hour": lambda: history.page(status="failed",
                                                            since=time.time() - 3600),
            "class + failed (combined, cursor)": lambda: history.page(job_class=CLASSES[3],
                                                                      status="failed"),
            "jid lookup (timeline)": lambda: history.timeline(sample.jid),
            "daily counts, 30 days": lambda: history.daily_counts(30),
        }
        rows: list[tuple[str, str, str]] = []
        for name, call in reads.items():
            median, p95 = timed(call, repeat)
            rows.append((name, f"{median:.2f}", f"{p95:.2f}"))
        rows.append(("fill: records/s", f"{count / fill_seconds:,.0f}", ""))
        rows.append(("write: Redis commands per record", f"{per_record:.3f}",
                     f"{trimming:.3f} (full, trimming)"))
        rows.append(("write: Redis CPU per record (us)", f"{redis_us:.1f}",
                     f"{trimming_us:.1f} (full, trimming)"))
        rows.append(("memory per record (bytes)", f"{memory:,.0f}", ""))
        costs = sorted(worker_cost() for _ in range(3))
        rows.append(("worker CPU per job, middleware + JSON (us)", f"{costs[1]:.1f}",
                     f"{costs[0]:.1f}-{costs[2]:.1f}"))
        client.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=30)
    options = parser.parse_args(argv)
    if options.records < BATCH or options.repeat < 1:
        parser.error(f"--records must be >= {BATCH} and --repeat >= 1")
    rows = run(options.records, options.repeat)
    print(f"History reads, {options.records:,} records, {options.repeat} calls each "
          "(ms: median, p95)\n")
    print("| read | median | p95 |\n|---|---|---|")
    for name, median, p95 in rows:
        print(f"| {name} | {median} | {p95} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
