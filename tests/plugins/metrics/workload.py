"""A known workload run by a real worker with the metrics plugin on (shared by the plugin,
CLI and exporter tests)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import redis

from cogworker.app import App
from cogworker.redis.keys import KeySchema
from helpers.threaded_worker import WAIT, Countdown, working

FAST_RUNS, SLOW_RUNS, BROKEN_RUNS = 6, 2, 2
SLOW_SECONDS = 0.03


def metrics_app(redis_url: str, namespace: str, **settings: Any) -> App:
    """An app with the metrics plugin on, short flush and tick intervals."""
    return App(redis_url, namespace=namespace, fetch="reliable", concurrency=3,
               poll_interval=0.2, queues=("default", "low"), plugins=("metrics",),
               plugin_options={"periodic": {"tick_interval": 0.2},
                               "metrics": {"flush_interval": 0.2}}, **settings)


def leave_orphans(client: redis.Redis, keys: KeySchema, job_class: str, count: int) -> None:
    """What a reliable process killed long ago leaves behind: ``count`` jobs of
    ``job_class`` on its in-progress list, its registry entry and an old last beat, but no
    presence key. A worker's first orphan check puts them back on their queue."""
    dead = "gone:1:aaaaaaaaaaaa"
    for n in range(count):
        client.lpush(keys.inprogress(dead), json.dumps(
            {"class": job_class, "args": [1000 + n], "jid": f"orphan{n}", "queue": "default",
             "retry": 0, "created_at": time.time()}))
    client.sadd(keys.inprogress_identities, dead)
    client.hset(keys.last_beat, dead, int(client.time()[0]) - 10_000)


@dataclass
class Workload:
    """What :func:`run_workload` ran: every run finished before it returned."""

    fired_cron: bool


def run_workload(app: App, *, with_cron: bool = False, orphans: int = 0) -> Workload:
    """Fast (6 runs, queue default), Slow (2 runs of 30 ms, queue low) and Broken (2 runs
    that fail, no retries: dead); with ``with_cron`` a cron entry fires its catch-up slot;
    ``orphans`` more Fast runs recovered from a dead process (see :func:`leave_orphans`)."""
    runs = Countdown(FAST_RUNS + SLOW_RUNS + BROKEN_RUNS + (1 if with_cron else 0) + orphans)

    @app.job(name="Fast")
    def fast(n: int) -> None:
        runs.record(("fast", n))

    @app.job(name="Slow", queue="low")
    def slow(n: int) -> None:
        time.sleep(SLOW_SECONDS)
        runs.record(("slow", n))

    @app.job(name="Broken", retry=0)
    def broken(n: int) -> None:
        runs.record(("broken", n))
        raise RuntimeError("broken on purpose")

    @app.job(name="Tick")
    def tick() -> None:
        runs.record(("tick", 0))

    if with_cron:
        app.periodic("* * * * *", tick)
    for n in range(FAST_RUNS):
        fast.perform_async(n)
    for n in range(SLOW_RUNS):
        slow.perform_async(n)
    for n in range(BROKEN_RUNS):
        broken.perform_async(n)
    if orphans:
        client = redis.Redis.from_url(app.settings.redis_url or "")
        try:
            leave_orphans(client, KeySchema(app.settings.namespace), "Fast", orphans)
        finally:
            client.close()
    with working(app):
        assert runs.done.wait(WAIT), f"only {len(runs.calls)} runs: {runs.calls}"
        deadline = time.monotonic() + WAIT
        while app.broker.sets.size("dead") < BROKEN_RUNS and time.monotonic() < deadline:
            time.sleep(0.02)  # the dead write follows the run's end
    return Workload(fired_cron=with_cron)
