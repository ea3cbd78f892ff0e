"""A push loads only the push path: no worker, dashboard, cron or private-server modules.

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
    "ctypes",
)


def test_a_push_imports_nothing_beyond_the_push_path(
        redis_url: str, namespace: str, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("COGWORKER_")}
    done = subprocess.run([sys.executable, "-c", PUSH_ONCE, redis_url, namespace], env=env,
                          cwd=tmp_path, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.splitlines()[-1])

    assert "cogworker.redis.queue_store" in modules  # the push did go through the broker
    loaded = [name for name in modules
              if any(name == banned or name.startswith(f"{banned}.")
                     for banned in NOT_ON_THE_PUSH_PATH)]
    assert loaded == []
