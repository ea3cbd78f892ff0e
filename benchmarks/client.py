"""The client subprocess: enqueue jobs for one system and print how long it took (JSON).

``python -m benchmarks.client MODULE each|bulk N [--job incr|noop]`` enqueues jobs 0..N-1
one call each, or in bulk; ``python -m benchmarks.client MODULE paced N --interval S``
enqueues N latency probes S seconds apart. Only the enqueue loop is timed: imports and
connecting are not.
"""

from __future__ import annotations

import argparse
import importlib
import json
import time

from benchmarks.catalog import JOB_KINDS, QueueClient


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.client")
    parser.add_argument("module", help="the system's module, e.g. benchmarks.systems.rq_app")
    parser.add_argument("action", choices=["each", "bulk", "paced"])
    parser.add_argument("count", type=int)
    parser.add_argument("--interval", type=float, default=0.02)
    parser.add_argument("--job", choices=JOB_KINDS, default="noop")
    return parser.parse_args()


def main() -> None:
    options = _parse()
    client: QueueClient = importlib.import_module(options.module).make_client(options.job)
    arguments = list(range(options.count))
    try:
        started = time.perf_counter()
        if options.action == "each":
            client.push_each(arguments)
        elif options.action == "bulk":
            client.push_bulk(arguments)
        else:
            client.push_paced(options.count, options.interval)
        seconds = time.perf_counter() - started
    finally:
        client.close()
    print(json.dumps({"seconds": seconds}))


if __name__ == "__main__":
    main()
