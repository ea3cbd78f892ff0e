"""Redis commands the ``status`` plugin adds per push and per job (INFO commandstats).

Runs a private redis-server on a unix socket in a temporary directory, then:

1. pushes N jobs one by one with the plugin off, then on: commands per push;
2. runs a real worker (the ``Launcher``, in this process) over N queued jobs with the plugin
   off, then on: commands per processed job (heartbeats and start/stop included), and the
   wall-clock rate, which on a shared machine is only indicative.

Usage: ``python -m benchmarks.status_cost [N]`` (default 5000).
"""

from __future__ import annotations

import sys
import threading

import redis

import cogworker
from benchmarks.private_redis import private_server, run_worker_until


def commands(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def app_for(url: str, status: bool, done: threading.Event | None = None,
            count: int = 0) -> cogworker.App:
    app = cogworker.App(redis_url=url, namespace="measure", concurrency=10,
                        plugins=("status",) if status else ())
    ran = [0]
    lock = threading.Lock()

    @app.job(name="Noop")
    def noop() -> None:
        with lock:
            ran[0] += 1
            if done is not None and ran[0] >= count:
                done.set()

    return app


def per_push(client: redis.Redis, url: str, count: int, status: bool) -> float:
    app = app_for(url, status)
    app.push({"class": "Noop", "args": []})  # the first push registers the queue
    client.config_resetstat()
    for _ in range(count):
        app.push({"class": "Noop", "args": []})
    calls = sum(commands(client).values()) - 1  # the INFO itself
    app.close()
    client.delete("measure:queue:default")
    return calls / count


def per_job(client: redis.Redis, url: str, count: int, status: bool) -> tuple[float, float]:
    pusher = app_for(url, False)
    pusher.push_bulk("Noop", [[] for _ in range(count)])
    pusher.close()
    done = threading.Event()
    app = app_for(url, status, done, count)
    client.config_resetstat()
    elapsed, _cpu = run_worker_until(app, done)
    calls = sum(commands(client).values()) - 1
    app.close()
    return calls / count, count / elapsed


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with private_server() as (client, url):
        for status in (False, True):
            print(f"status {'on ' if status else 'off'}: "
                  f"{per_push(client, url, count, status):.2f} commands per push")
        for status in (False, True):
            calls, rate = per_job(client, url, count, status)
            print(f"status {'on ' if status else 'off'}: {calls:.3f} commands per job, "
                  f"{rate:,.0f} jobs/s (wall clock, shared machine)")

if __name__ == "__main__":
    main()
