"""Run the example end to end: a private Redis, a worker, four jobs, a clean stop.

    python examples/quickstart/run.py

Everything stays under ``.cogworker/`` in the current directory; the private redis-server is
stopped at the end (``cogworker redis stop``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from jobs import app, fetch_report, flaky, greet, reminder  # noqa: E402

from cogworker.api import Stats  # noqa: E402
from cogworker.redis.server_state import stop_project_server  # noqa: E402

TIMEOUT = 60.0


def main() -> int:
    project = Path.cwd()
    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    print("==> starting a worker: cogworker run -A jobs:app", flush=True)
    worker = subprocess.Popen(
        [sys.executable, "-m", "cogworker", "run", "-A", "jobs:app", "-t", "10"],
        cwd=project, env=env,
    )
    try:
        return _demo(worker)
    finally:
        if worker.poll() is None:
            worker.kill()
        stop_project_server(project)
        print("==> private redis-server stopped", flush=True)


def _demo(worker: subprocess.Popen[bytes]) -> int:
    stats = Stats(app.broker)
    base, failed_base = stats.processed, stats.failed
    print("==> enqueueing: greet, flaky (fails once, retried), reminder (in 3 s), async report",
          flush=True)
    greet.perform_async("world")
    flaky.perform_async(1001)
    reminder.perform_in(3, "stand up and stretch", time.time())
    fetch_report.perform_async(7)
    # 4 jobs; flaky succeeds on its second attempt, so 4 successes and 1 failure.
    deadline = time.monotonic() + TIMEOUT
    while stats.processed - base < 4 and time.monotonic() < deadline:
        if worker.poll() is not None:
            print(f"the worker exited early with status {worker.returncode}", file=sys.stderr)
            return 1
        time.sleep(0.2)
    done = stats.processed - base
    failed = stats.failed - failed_base
    print(f"==> {done} job(s) done, {failed} failed attempt(s); stopping the worker",
          flush=True)
    worker.send_signal(signal.SIGTERM)
    status = worker.wait(timeout=30)
    print(f"==> worker exited with status {status}", flush=True)
    return 0 if done >= 4 and status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
