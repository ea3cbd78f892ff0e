"""``benchmarks/run batches``: what a job costs inside a batch compared with outside one.

Runs a private redis-server on a unix socket in a temporary directory, then, round-robin
over ``--runs``:

1. pushes N jobs one by one outside a batch (with the plugin off, then on), then N inside
   batches of ``--size`` jobs
   (``with app.batch(...)``, callbacks on complete and success): Redis commands and
   microseconds per push;
2. runs a real worker (the ``Launcher``, in this process, 10 threads) over N queued jobs
   outside a batch, then over the same number in batches: Redis commands per job while
   it runs (INFO commandstats, every ``redis.call`` inside Lua counted; heartbeats and
   start/stop included), EVALSHA commands per job (fetch claims and settles), the settle
   round trips per job (calls of the store: one per failure or per ack batch), wall
   microseconds per job and this process's CPU microseconds per job.

Usage: ``python -m benchmarks.batches [--n 4000] [--size 200] [--runs 3]`` (about 30 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Sequence

import redis

import cogworker
from benchmarks.private_redis import private_server, run_worker_until
from cogworker.redis.batch_store import RedisBatchStore

NAMESPACE = "measure"


class RoundTrips:
    """Counts the settle round trips of this process: one ``settle`` call each, one
    ``settle_many`` (a pipeline) each."""

    count = 0

    @classmethod
    def install(cls) -> None:
        for name in ("settle", "settle_many"):
            original = getattr(RedisBatchStore, name)

            def counted(self: RedisBatchStore, *args: object, _original: object = original,
                        **kwargs: object) -> object:
                cls.count += 1
                return _original(self, *args, **kwargs)  # type: ignore[operator]

            setattr(RedisBatchStore, name, counted)


def commands(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def make_app(url: str, done: threading.Event | None = None, count: int = 0,
             plugin: bool = True) -> cogworker.App:
    app = cogworker.App(redis_url=url, namespace=NAMESPACE, concurrency=10,
                        plugins=() if plugin else ("no:batches",))
    ran = [0]
    lock = threading.Lock()

    @app.job(name="Noop")
    def noop() -> None:
        with lock:
            ran[0] += 1
            if done is not None and ran[0] >= count:
                done.set()

    @app.job(name="Callback")
    def callback(bid: str, counts: dict[str, int]) -> None:
        """Pushed once per batch and kind; not counted as one of the N jobs."""

    return app


def push_all(app: cogworker.App, count: int, size: int) -> None:
    if size == 0:
        for _ in range(count):
            app.push({"class": "Noop", "args": []})
        return
    for start in range(0, count, size):
        with app.batch(on_complete="Callback", on_success="Callback", callback_queue="cb"):
            for _ in range(min(size, count - start)):
                app.push({"class": "Noop", "args": []})


def measure_pushes(client: redis.Redis, url: str, count: int, size: int,
                   plugin: bool) -> dict[str, float]:
    app = make_app(url, plugin=plugin)
    app.push({"class": "Noop", "args": []})  # the first push registers the queue
    client.config_resetstat()
    started = time.perf_counter()
    push_all(app, count, size)
    elapsed = time.perf_counter() - started
    calls = sum(commands(client).values()) - 1  # the INFO itself
    app.close()
    client.delete(f"{NAMESPACE}:queue:default")
    return {"commands": calls / count, "us": elapsed / count * 1e6}


def measure_jobs(client: redis.Redis, url: str, count: int, size: int,
                 plugin: bool) -> dict[str, float]:
    pusher = make_app(url, plugin=plugin)
    push_all(pusher, count, size)
    pusher.close()
    done = threading.Event()
    app = make_app(url, done, count, plugin=plugin)
    client.config_resetstat()
    RoundTrips.count = 0
    elapsed, cpu = run_worker_until(app, done)
    stats = commands(client)
    app.close()
    client.delete(f"{NAMESPACE}:queue:cb")
    return {"commands": (sum(stats.values()) - 1) / count, "evalsha": stats.get("evalsha", 0)
            / count, "trips": RoundTrips.count / count, "us": elapsed / count * 1e6,
            "cpu_us": cpu / count * 1e6}


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmarks/run batches", description=__doc__)
    parser.add_argument("--n", type=int, default=4000, help="jobs per measurement (4000)")
    parser.add_argument("--size", type=int, default=200, help="jobs per batch (200)")
    parser.add_argument("--runs", type=int, default=3, help="rounds; medians shown (3)")
    options = parser.parse_args(argv)
    if options.n < options.size or options.size < 1 or options.runs < 1:
        parser.error("--n must be at least --size, --size and --runs at least 1")
    return options


def _median(rows: list[dict[str, float]], name: str) -> float:
    return statistics.median(row[name] for row in rows)


Variant = tuple[str, int, bool]
"""(label, jobs per batch or 0 for none, whether the batches plugin is on)."""


def variants(size: int) -> tuple[Variant, ...]:
    return (("outside a batch, plugin off", 0, False), ("outside a batch", 0, True),
            ("in batches", size, True))


def report(options: argparse.Namespace, pushes: dict[str, list[dict[str, float]]],
           jobs: dict[str, list[dict[str, float]]]) -> None:
    print(f"Command: `benchmarks/run batches {' '.join(sys.argv[1:])}`")
    print(f"N = {options.n:,} jobs, batches of {options.size}, {options.runs} round(s), "
          "medians; worker: Launcher in-process, 10 threads, reliable fetch\n")
    print("| jobs | push: commands | push: µs | run: commands/job | run: EVALSHA/job | "
          "run: settle round trips/job | run: wall µs/job | run: CPU µs/job |")
    print("|---|---|---|---|---|---|---|---|")
    for label, _size, _plugin in variants(options.size):
        p, j = pushes[label], jobs[label]
        print(f"| {label} | {_median(p, 'commands'):.2f} | {_median(p, 'us'):.0f} | "
              f"{_median(j, 'commands'):.2f} | {_median(j, 'evalsha'):.3f} | "
              f"{_median(j, 'trips'):.3f} | {_median(j, 'us'):.0f} | "
              f"{_median(j, 'cpu_us'):.0f} |")


def main(argv: Sequence[str] | None = None) -> int:
    options = _parse(list(sys.argv[1:] if argv is None else argv))
    RoundTrips.install()
    chosen = variants(options.size)
    pushes: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in chosen}
    jobs: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in chosen}
    with private_server() as (client, url):
        for number in range(options.runs):
            for label, size, plugin in chosen:
                print(f"round {number + 1}: {label}", file=sys.stderr)
                pushes[label].append(measure_pushes(client, url, options.n, size, plugin))
                jobs[label].append(measure_jobs(client, url, options.n, size, plugin))
    report(options, pushes, jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
