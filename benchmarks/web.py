"""How fast every dashboard page and fragment answers with a big fleet's worth of jobs.

Fills a private Redis (no persistence) with ``--jobs`` jobs spread over four queues, the
retry, dead and schedule sets, plus live processes with running jobs, cron entries and
unique locks, and ``--history`` run records (the history plugin on; written through its
store in batches of 1,000, as the plugin writes them), an hour of per-class metrics and a
failure trail; serves the dashboard with uvicorn on 127.0.0.1; asks for every page and
fragment ``--runs`` times and prints the server time of each (from the request's arrival
to its last byte, measured inside the server) as a Markdown table.

Usage::

    python -m benchmarks.web                   # 100,000 jobs, 50,000 runs, 20 runs a page
    python -m benchmarks.web --jobs 20000 --history 5000 --runs 5
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import redis
import uvicorn

from benchmarks.history_reads import CLASSES as HISTORY_CLASSES
from benchmarks.history_reads import make_records
from cogworker.app import App
from cogworker.core.backtrace import compress_backtrace
from cogworker.core.broker import ATTEMPTS, HISTORY, METRICS, Attempt
from cogworker.core.broker.metrics import (
    BUCKET_COUNT,
    MetricsBatch,
    SeriesKey,
    Timings,
    bucket_of,
)
from cogworker.core.payload import dumps, new_jid
from cogworker.core.periodic_types import PeriodicEntry
from cogworker.plugins.history.options import HistoryOptions
from cogworker.plugins.metrics.options import DEFAULT_HOUR_RETENTION, DEFAULT_MINUTE_RETENTION
from cogworker.redis.broker import RedisBroker
from cogworker.redis.server import RedisServer
from cogworker.redis.server_process import free_port
from cogworker.web import create_app

NAMESPACE = "bench"
QUEUES = ("default", "mail", "reports", "critical")
CLASSES = ("billing.ChargeCard", "mail.SendWelcome", "sync.PullInventory", "reports.Build")
BATCH = 1000
LIMIT_MS = 150.0


class ServerTimer:
    """ASGI middleware noting how long each request took inside the server, by path."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.samples: dict[str, list[float]] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        key = scope["path"] + ("?" + scope["query_string"].decode() if scope["query_string"]
                               else "")

        async def timed_send(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.samples.setdefault(key, []).append(
                    (time.perf_counter() - started) * 1000)

        await self.app(scope, receive, timed_send)


def redis_of(app: App) -> RedisBroker:
    """The app's broker, built from a Redis URL here: the benchmark seeds Redis directly."""
    broker = app.broker
    if not isinstance(broker, RedisBroker):
        raise SystemExit(f"the web benchmark needs the Redis broker, not {broker.name}")
    return broker


def _job(index: int, queue: str, now: float, **extra: Any) -> dict[str, Any]:
    return {"class": CLASSES[index % len(CLASSES)], "args": [index, {"account": index * 7}],
            "queue": queue, "jid": new_jid(), "retry": True, "created_at": now - index,
            "enqueued_at": now - index, **extra}


def fill(client: redis.Redis, app: App, jobs: int) -> dict[str, str]:
    """Write ``jobs`` jobs: 40% queued, 20% each retrying, dead and scheduled."""
    keys = redis_of(app).keys
    now = time.time()
    marks: dict[str, str] = {}
    share = {"queued": jobs * 4 // 10, "retry": jobs // 5, "dead": jobs // 5}
    share["schedule"] = jobs - sum(share.values())
    backtrace = compress_backtrace([f"  File \"app/jobs.py\", line {n}, in perform"
                                    for n in range(20)])
    pipe = client.pipeline(transaction=False)
    for index in range(jobs):
        if index < share["queued"]:
            queue = QUEUES[index % len(QUEUES)]
            job = _job(index, queue, now)
            pipe.lpush(keys.queue(queue), dumps(job))
            marks.setdefault("oldest_queued", job["jid"])
            marks["queued_queue"] = QUEUES[0]
        elif index < share["queued"] + share["retry"]:
            job = _job(index, "default", now, retry_count=index % 20, failed_at=now - index,
                       error_class="TimeoutError", error_message="upstream timed out",
                       error_backtrace=backtrace)
            pipe.zadd(keys.retry, {dumps(job): now + index})
        elif index < jobs - share["schedule"]:
            job = _job(index, "default", now, retry_count=25, error_class="ValueError",
                       error_message=f"bad input {index}")
            pipe.zadd(keys.dead, {dumps(job): now - index})
            marks["dead"], marks["dead_score"] = job["jid"], repr(now - index)
        else:
            pipe.zadd(keys.schedule, {dumps(_job(index, "mail", now)): now + index})
        if index % BATCH == BATCH - 1:
            pipe.execute()
    pipe.sadd(keys.queues, *QUEUES)
    pipe.execute()
    _fill_fleet(client, app, now, marks)
    return marks


def _fill_fleet(client: redis.Redis, app: App, now: float, marks: dict[str, str]) -> None:
    """20 processes of 25 threads (half busy), 20 cron entries, 2,000 unique locks."""
    keys = redis_of(app).keys
    pipe = client.pipeline(transaction=False)
    for number in range(20):
        identity = f"host-{number}:{1000 + number}:{number:012x}"
        info = {"hostname": f"host-{number}", "pid": 1000 + number, "concurrency": 25,
                "queues": list(QUEUES), "started_at": now - 3600, "rss_kb": 90_000}
        pipe.hset(keys.process(identity), mapping={"info": dumps(info), "busy": 12,
                                                   "quiet": "false"})
        pipe.expire(keys.process(identity), 60)
        pipe.sadd(keys.processes, identity)
        for thread in range(12):
            entry = {"queue": "default", "payload": _job(thread, "default", now),
                     "run_at": int(now) - thread}
            pipe.hset(keys.workers(identity), f"tid-{thread}", dumps(entry))
    for index in range(2000):
        pipe.set(keys.unique(f"{index:040x}"), new_jid(), ex=3600)
    pipe.execute()
    entries = [PeriodicEntry(f"{index % 60} * * * *", f"cron.Task{index}", [index])
               for index in range(20)]
    app.broker.periodic.publish(entries, replace=True)
    marks["lock_owner"] = new_jid()


def fill_observed(app: App, runs: int, marks: dict[str, str]) -> None:
    """``runs`` history records (20 classes, 4 queues), 60 minutes of metrics for those
    classes, and a 5-attempt failure trail for the dead job the detail pages open."""
    store = app.broker.extension(HISTORY)
    metrics = app.broker.extension(METRICS)
    trails = app.broker.extension(ATTEMPTS)
    if store is None or metrics is None or trails is None:
        raise SystemExit("the web benchmark needs a broker with history, metrics and attempts")
    records = make_records(runs)
    retention = HistoryOptions(max_entries=max(runs, 1)).retention
    for start in range(0, runs, BATCH):
        store.append(records[start:start + BATCH], retention)
    marks["history_class"] = records[0].job_class
    marks["history_jid"] = records[runs // 2].jid
    buckets = [0] * BUCKET_COUNT
    buckets[bucket_of(40.0)], buckets[bucket_of(400.0)] = 90, 10
    timings = Timings(95, 5, 7600.0, tuple(buckets))
    now = time.time()
    for minute in range(60):
        metrics.record(MetricsBatch({SeriesKey(name, queue): timings
                                     for name in HISTORY_CLASSES for queue in QUEUES[:2]}),
                       now - 60 * minute, DEFAULT_MINUTE_RETENTION, DEFAULT_HOUR_RETENTION)
    for number in range(1, 6):
        trails.append(marks["dead"], Attempt(number, now - 60 * number, "retrying",
                                             "ValueError", f"bad input {number}"))


def pages(marks: dict[str, str]) -> list[str]:
    return [
        "/", "/overview?fragment=counters", "/overview?fragment=queues",
        "/overview?fragment=redis", "/overview/throughput.json", "/workers/summary",
        "/jobs", "/jobs?fragment=table", "/jobs?page=3000", "/jobs?status=enqueued&page=1500",
        "/jobs?status=enqueued&order=oldest", "/jobs?status=running",
        "/jobs?status=retrying", "/jobs?status=scheduled&order=oldest",
        "/jobs?status=dead&page=800", "/jobs?q=TimeoutError",
        "/jobs?q=no-such-text-anywhere", "/jobs?status=dead&q=bad+input+7",
        f"/jobs?status=dead&selected={marks['dead']}&in=dead",
        f"/jobs?status=dead&selected={marks['dead']}&in=dead&ss={marks['dead_score']}",
        f"/jobs?status=enqueued&selected={marks['oldest_queued']}&in=enqueued"
        f"&sq={marks['queued_queue']}",
        "/schedules", "/schedules?fragment=table", "/workers", "/workers?fragment=cards",
        "/locks", "/locks?fragment=table", f"/locks/where?owner={marks['lock_owner']}",
        "/locks?locate=1",
        "/history", "/history?fragment=table", "/history?status=failed",
        f"/history?class={marks['history_class']}", "/history?queue=billing&status=failed",
        "/history?sort=duration", "/history?sort=duration&order=asc&page=400",
        "/history?page=1999", f"/history?jid={marks['history_jid']}", "/history?range=1h",
        "/history?error=declined", "/history?error=no-such-error-text",
        "/timings", "/timings?fragment=table", "/timings?range=24h&sort=p99",
        f"/timings/series.json?class={HISTORY_CLASSES[0]}&range=1h",
        f"/timings/series.json?class={HISTORY_CLASSES[0]}&range=24h",
        "/overview?days=90", "/overview/daily.json?days=90", "/metrics",
    ]


def serve(app: Any) -> tuple[str, uvicorn.Server, threading.Thread]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the dashboard did not start")
        time.sleep(0.01)
    return f"http://127.0.0.1:{port}", server, thread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--history", type=int, default=50_000,
                        help="run records in the history (default 50,000)")
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work, RedisServer(
            Path(work), appendonly=False, extra_args=("--save", "")) as server:
        app = App(redis_url=server.url, namespace=NAMESPACE,
                  plugins=("history", "status", "attempts"))
        load_before = os.getloadavg()
        started = time.perf_counter()
        marks = fill(redis_of(app).client, app, options.jobs)
        fill_observed(app, options.history, marks)
        filled = time.perf_counter() - started
        timer = ServerTimer(create_app(app))
        url, uvi, thread = serve(timer)
        try:
            with httpx.Client(base_url=url, timeout=60) as http:
                for path in pages(marks):
                    http.get(path)  # warm-up: templates compiled, scripts loaded
                timer.samples.clear()
                for _ in range(options.runs):
                    for path in pages(marks):
                        response = http.get(path)
                        if response.status_code != 200:
                            raise SystemExit(f"{path} answered {response.status_code}")
        finally:
            uvi.should_exit = True
            thread.join(10)
        version = redis_of(app).client.info()["redis_version"]
        app.close()
    report(timer.samples, pages(marks), options, filled, version,
           (load_before, os.getloadavg()))
    worst = max(max(samples) for samples in timer.samples.values())
    return 0 if worst < LIMIT_MS else 1


def report(samples: dict[str, list[float]], paths: list[str], options: argparse.Namespace,
           filled: float, redis_version: str,
           loads: tuple[tuple[float, ...], tuple[float, ...]]) -> None:
    print(f"Command: `python -m benchmarks.web --jobs {options.jobs} --history "
          f"{options.history} --runs {options.runs}`")
    before, after = (", ".join(f"{value:.2f}" for value in load) for load in loads)
    print(f"Machine: {platform.processor() or platform.machine()}, "
          f"{len(os.sched_getaffinity(0))} CPUs, Python "
          f"{platform.python_version()}, Redis {redis_version}; load average (1, 5, 15 min) "
          f"{before} before the run, {after} after it; {options.jobs:,} jobs and "
          f"{options.history:,} history records written in {filled:.1f} s\n")
    print("| page or fragment | median (ms) | p95 (ms) | max (ms) |")
    print("|---|---|---|---|")
    for path in paths:
        times = sorted(samples[path])
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        shown = path if len(path) <= 60 else path[:57] + "..."
        print(f"| `{shown}` | {statistics.median(times):.1f} | {p95:.1f} | {times[-1]:.1f} |")
    worst = max(max(times) for times in samples.values())
    print(f"\nSlowest single answer: {worst:.1f} ms (limit {LIMIT_MS:.0f} ms).")


if __name__ == "__main__":
    sys.exit(main())
