"""App modules for runtime tests and small helpers to read what a worker left in Redis."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any, cast

import redis

from cogworker.redis.keys import KeySchema

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
