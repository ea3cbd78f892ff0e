"""``python -m benchmarks.cancel_gate``: what the ``cancel`` plugin costs a job's CPU.

A job that nobody cancels passes two steps of the plugin: the start gate (a dictionary
look-up of its jid) and the server middleware (a ``CancelSignal`` made, registered and
made current around the run, then taken down). Neither sends a Redis command (see
``tests/plugins/cancel/test_cancel_cost.py``); this measures their CPU alone, in this one
process, against an empty step (a call of a function that does nothing), as the median
over ``--runs`` loops of ``--n`` calls of the process CPU time per call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence

from cogworker.app import App
from cogworker.core.broker import CANCELLATIONS
from cogworker.core.middleware import JobContext
from cogworker.plugins.cancel import _gate, _middleware
from cogworker.plugins.cancel.watch import CancelWatch


def per_call_us(step: Callable[[], object], n: int) -> float:
    started = time.process_time()
    for _ in range(n):
        step()
    return (time.process_time() - started) / n * 1e6


def steps() -> dict[str, Callable[[], object]]:
    app = App(redis_url="memory://cancel-gate", plugins=("memory",))

    @app.job(name="tick")
    def tick() -> None: ...

    store = app.broker.extension(CANCELLATIONS)
    assert store is not None
    watch = CancelWatch(store, 86400.0, 30.0, time.time)
    watch.note("a-cancelled-jid-of-another-job")  # the dictionary is not empty
    gate, middleware = _gate(app, watch), _middleware(watch)
    job = {"class": "tick", "jid": "0123456789abcdef01234567", "args": [], "queue": "default"}
    ctx = JobContext(app=app, job=job, queue="default", raw="{}",
                     definition=app.registry.get("tick"))

    def nothing() -> None:
        return None

    return {"empty step": nothing, "start gate": lambda: gate(job),
            "server middleware": lambda: middleware(ctx, nothing)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cancel_gate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200_000, help="calls per loop")
    parser.add_argument("--runs", type=int, default=5, help="loops per step")
    options = parser.parse_args(argv)
    measured = steps()
    figures: dict[str, list[float]] = {name: [] for name in measured}
    for _ in range(options.runs):
        for name, step in measured.items():
            figures[name].append(per_call_us(step, options.n))
    print(f"Command: `python -m benchmarks.cancel_gate --n {options.n} --runs {options.runs}`")
    print("\n| step | CPU per job (µs), median [min-max] |\n|---|---|")
    for name, values in figures.items():
        print(f"| {name} | {statistics.median(values):.2f} "
              f"[{min(values):.2f}-{max(values):.2f}] |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
