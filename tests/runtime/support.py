"""App modules for runtime tests and small helpers to read what a worker left in Redis."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

import redis

from cogworker.redis.keys import KeySchema
from helpers.workers import WorkerProcess, wait_until

StartWorker = Callable[..., WorkerProcess]
"""The ``start_worker`` fixture: ``start_worker(app_body, *cli_args, url=, wait=, env=)``."""

STARTED = " started identity="

# Fast intervals, so that retries, heartbeats and remote control show up in a second.
APP_HEADER = """
import os
import time

import cogworker
from ledger_client import record

app = cogworker.App(heartbeat_interval=0.3, poll_interval=0.3, orphan_check_interval=1.0)
"""

# Work(tag): records "ran" with its queue; Slow(seconds): records "start" then "done".
WORK_JOBS = APP_HEADER + """

@app.job(name="Work")
class Work(cogworker.Job):
    def perform(self, tag):
        record(self.jid, "Work", "ran", self.job["queue"])


@app.job(name="Slow")
class Slow(cogworker.Job):
    def perform(self, seconds):
        record(self.jid, "Slow", "start")
        time.sleep(seconds)
        record(self.jid, "Slow", "done")
"""


def payload(job_class: str, args: Sequence[Any], queue: str, jid: str, **fields: Any) -> str:
    """A job payload as a producer writes it."""
    return json.dumps({"class": job_class, "args": list(args), "queue": queue, "jid": jid,
                       "retry": True, "created_at": 1700000000.0,
                       "enqueued_at": 1700000000.0, **fields})


def push_raw(client: redis.Redis, keys: KeySchema, queue: str, *raws: str | bytes) -> None:
    """LPUSH raws (the producer's end) and register the queue, as a push does."""
    client.sadd(keys.queues, queue)
    client.lpush(keys.queue(queue), *raws)


def jids_on(client: redis.Redis, key: str) -> list[str]:
    """The jids of a list, left (last to be fetched) to right (next to be fetched)."""
    return [json.loads(raw)["jid"] for raw in client.lrange(key, 0, -1)]


def sorted_set_jobs(client: redis.Redis, key: str) -> list[tuple[dict[str, Any], float]]:
    """Every entry of a sorted set, parsed, with its score, lowest score first."""
    entries = cast(list[tuple[bytes, float]], client.zrange(key, 0, -1, withscores=True))
    return [(json.loads(raw), score) for raw, score in entries]


def cogworker_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``python -m cogworker ARGS`` in a fresh interpreter; never raises on exit status."""
    return subprocess.run([sys.executable, "-m", "cogworker", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def wait_started(worker: WorkerProcess) -> None:
    """Wait for the start-up line; fails with the log if the process exits first."""
    assert worker.process is not None
    process = worker.process
    wait_until(lambda: STARTED in worker.output() or process.poll() is not None, 30,
               lambda: f"the worker never started:\n{worker.output()[-3000:]}")
    assert process.poll() is None, f"the worker exited:\n{worker.output()[-3000:]}"


def identity_of(worker: WorkerProcess) -> str:
    """The identity from the worker's start-up line."""
    for line in worker.output().splitlines():
        if STARTED in line:
            return line.split(STARTED, 1)[1].split()[0]
    raise AssertionError(f"no start-up line in the worker log:\n{worker.output()[-3000:]}")


def wait_exit(worker: WorkerProcess, timeout: float = 30.0) -> int:
    """Wait for the worker to exit by itself (no signal sent); returns its exit status."""
    assert worker.process is not None
    try:
        return worker.process.wait(timeout)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"the worker did not exit in {timeout}s:\n{worker.output()[-3000:]}") from exc
