"""A push loads only the push path: no worker, dashboard, cron, API or private-server
modules, and of each default plugin only its hooks and option checks.

Checked in a fresh interpreter (``sys.modules`` after one ``perform_async``), so a module
that a push does not need, imported by a plugin at its top, shows up here. What a push
costs in time is measured by ``benchmarks/cold_start.py``, never by a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PUSH_ONCE = """
import json, sys
import cogworker

app = cogworker.App(redis_url=sys.argv[1], namespace=sys.argv[2])

@app.job
def work(number):
    pass

work.perform_async(1)
print(json.dumps(sorted(sys.modules)))
"""

NOT_ON_THE_PUSH_PATH = (
    "cogworker.worker",  # the runtime threads
    "cogworker.web",  # the dashboard
    "cogworker.cli",
    "cogworker.periodic",
    "croniter",
    "starlette",
    "cogworker.redis.server",  # the private redis-server: a URL is set
    "cogworker.redis.server_state",
    "cogworker.redis.held",  # broker facets a push does not use
    "cogworker.redis.process_registry",
    "cogworker.redis.periodic_store",
    "cogworker.redis.locate",
    "cogworker.redis.job_sets",  # and the modules only those facets need
    "cogworker.redis.lock_store",
    "cogworker.redis.requeue_keys",
    "cogworker.redis.search",
    "cogworker.redis.stats_store",
    "cogworker.redis.pubsub",  # the wake-up subscription: a worker's
    "cogworker.redis.quarantine",  # the wrong-type guard of pops and reads: a worker's
    "cogworker.redis.globs",
    "cogworker.core.background_flush",  # the bookkeeping plugins' writer: a worker's
    "cogworker.core.outage",
    "cogworker.api",  # the readers (a workflow's group launch reads batches there)
    "cogworker.core.broker.history_index",
    "cogworker.workflows",  # chains and groups: built by the user, run by a worker
    "cogworker.plugins.limits.limiter",  # only for jobs that declare limits, and workers
    "cogworker.plugins.cancel.watch",  # the workers' cancellation thread
    "cogworker.plugins.metrics.buffer",  # the workers' timings
    "ctypes",
    "cogworker.fetchers.basic",  # the reliable fetcher's fall-back and its recovery: a worker's
    "cogworker.fetchers.recovery",
)


IMPORT_REDIS = """
import json, sys
import redis

print(json.dumps(sorted(sys.modules)))
"""


def modules_after(script: str, *args: str, cwd: Path) -> list[str]:
    """``sys.modules`` at the end of ``script``, run in a fresh interpreter."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("COGWORKER_")}
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, cwd=cwd,
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_a_push_imports_nothing_beyond_the_push_path(
        redis_url: str, namespace: str, tmp_path: Path) -> None:
    modules = modules_after(PUSH_ONCE, redis_url, namespace, cwd=tmp_path)
    # what redis-py itself imports is not ours to judge (redis-py 8 loads the OpenTelemetry
    # SDK, and with it ctypes, when the SDK is installed)
    by_redis_py = set(modules_after(IMPORT_REDIS, cwd=tmp_path))

    assert "cogworker.redis.queue_store" in modules  # the push did go through the broker
    loaded = [name for name in modules
              if name not in by_redis_py
              and any(name == banned or name.startswith(f"{banned}.")
                      for banned in NOT_ON_THE_PUSH_PATH)]
    assert loaded == []
