"""``benchmarks/run runner-path``: what ``JobRunner.run`` costs one job, alone, in instructions.

``benchmarks/run hot-path`` measures the whole worker (fetch, processor threads, acks, the
flush threads); this measures only the per-job path that a processor thread runs between
fetching a job and settling it (decode, gates, the server chain, ``perform``, the lock
hooks, stats, the two log lines), in this process, on a no-op job with the default plugins
(``--plugins`` as for hot-path) and the CLI's INFO logging to a file. Nothing in it is
timed (the log handler writes every ``MAX_BUFFERED`` lines, the stats at the end) and the
hash seed is fixed, so the figure under valgrind repeats on a loaded machine::

    benchmarks/run runner-path                                # instructions per run
    benchmarks/run runner-path --plugins no:cancel            # with the cancel plugin off
    benchmarks/run runner-path --tool cpu --n 20000           # thread CPU µs per run

The instructions are ``(run of 3 N jobs - run of N jobs) / 2 N`` over the whole process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.environment import repository_root

PLUGINS_ENV = "BENCH_RUNNER_PLUGINS"


def run_jobs(count: int, plugins: Sequence[str], log: Path, built: int = 0) -> float:
    """Run ``count`` no-op jobs through one ``JobRunner`` (after 200 to warm up), of
    ``built`` payloads made beforehand (at least ``count``); thread CPU µs per run."""
    import cogworker
    from benchmarks.private_redis import private_server
    from cogworker.cli.logging_setup import configure_logging
    from cogworker.core.broker import UnitOfWork
    from cogworker.core.outage import OutageLog
    from cogworker.core.payload import encode
    from cogworker.worker import log_buffer
    from cogworker.worker.event_loop import EventLoopThread
    from cogworker.worker.executor import JobRunner
    from cogworker.worker.stats_buffer import StatsBuffer

    log_buffer.FLUSH_INTERVAL = 1e9  # no timed flush: one write every MAX_BUFFERED lines
    configure_logging("INFO", "text", str(log))
    with private_server() as (_client, url):
        app = cogworker.App(redis_url=url, namespace="runner-path", plugins=tuple(plugins))
        name = app.job(_noop).name
        now = time.time()
        raws = [encode({"class": name, "queue": "default", "args": [index],
                        "jid": f"{index:024x}", "retry": True, "created_at": now,
                        "enqueued_at": now}) for index in range(max(built, count) + 200)]
        outages = OutageLog()
        stats = StatsBuffer(app.broker.stats, outages, interval=1e9)
        runner = JobRunner(app, outages, stats, EventLoopThread())
        for raw in raws[-200:]:  # warm-up: first calls fill caches and plans
            runner.run(UnitOfWork("default", raw))
        started = time.thread_time()
        for raw in raws[:count]:
            settlement = runner.run(UnitOfWork("default", raw))
            if settlement.kind != "ack":
                raise SystemExit(f"the no-op job was not acknowledged: {settlement}")
        seconds = time.thread_time() - started
        stats.flush()
        app.close()
    return seconds * 1e6 / count


def _noop(argument: int) -> None:
    del argument


def _instructions(count: int, built: int, plugins: Sequence[str], work: Path) -> int:
    out = work / f"runner-{count}.cachegrind"
    # One hash seed: with a random one per process the figure moves by up to 15 % (dict
    # and set layouts), with this one it repeats to within about 1 %.
    env = {**os.environ, PLUGINS_ENV: ",".join(plugins), "PYTHONHASHSEED": "0"}
    subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                    f"--cachegrind-out-file={out}", sys.executable, "-m",
                    "benchmarks.runner_path", "--child", str(count), "--built", str(built),
                    "--log",
                    str(work / "runner.log")], env=env, check=True, cwd=repository_root(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for line in out.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no summary line in {out}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks/run runner-path", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="jobs (N; 1,000)")
    parser.add_argument("--plugins", default="", help="comma-separated, beside the defaults")
    parser.add_argument("--tool", default="cachegrind", choices=("cachegrind", "cpu"))
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--built", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--log", help=argparse.SUPPRESS)
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if options.child is not None:
        plugins = [name for name in os.environ.get(PLUGINS_ENV, "").split(",") if name]
        run_jobs(options.child, plugins, Path(options.log), options.built)
        return
    plugins = [name.strip() for name in options.plugins.split(",") if name.strip()]
    label = f"runner path: plugins={','.join(plugins) or '(defaults)'} n={options.n}"
    with tempfile.TemporaryDirectory(prefix="cogworker-runner-path-") as folder:
        if options.tool == "cpu":
            per_run = run_jobs(options.n, plugins, Path(folder) / "runner.log")
            print(f"{label}: thread CPU µs per run: {per_run:,.2f}")
            return
        # Both runs build the same payloads, so their difference is the runs alone.
        small = _instructions(options.n, 3 * options.n, plugins, Path(folder))
        large = _instructions(3 * options.n, 3 * options.n, plugins, Path(folder))
    print(f"{label}: instructions per run: {(large - small) / (2 * options.n):,.0f}")


if __name__ == "__main__":
    main()
