"""Redis goes away under a running worker (restarted, or every connection killed): the
worker carries on by itself, runs every job exactly once, and keeps its log readable."""

from __future__ import annotations

import collections
import re
import time

import pytest
import redis

from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.redis_servers import RedisServerFactory
from helpers.workers import Ledger, WorkerProcess, wait_until
from runtime.support import APP_HEADER, StartWorker, payload, push_raw

pytestmark = pytest.mark.slow

PACED_JOBS = APP_HEADER + """

@app.job(name="Paced")
class Paced(cogworker.Job):
    def perform(self, n):
        time.sleep(0.02)
        record(self.jid, "Paced", "ran")
"""

BATCH = 100
DOWN_FOR = 3.0  # seconds Redis stays stopped: every thread fails several times meanwhile


def push_batch(client: redis.Redis, keys: KeySchema) -> list[str]:
    jids = [new_jid() for _ in range(BATCH)]
    push_raw(client, keys, "default", *(payload("Paced", [n], "default", jid)
                                        for n, jid in enumerate(jids)))
    return jids


def wait_ran(ledger: Ledger, count: int, worker: WorkerProcess) -> None:
    wait_until(lambda: ledger.count("ran") >= count, 30,
               lambda: f"{ledger.count('ran')} of {count} ran:\n{worker.output()[-4000:]}")


def test_worker_survives_a_restart_and_killed_connections_running_each_job_once(
    start_worker: StartWorker, redis_server_factory: RedisServerFactory, ledger: Ledger,
    keys: KeySchema,
) -> None:
    server = redis_server_factory()  # AOF on: a restart keeps the queues
    client = redis.Redis.from_url(server.url)
    pushed = push_batch(client, keys)
    worker = start_worker(PACED_JOBS, "-c", "4", url=server.url)
    wait_ran(ledger, BATCH // 4, worker)

    client.close()
    server.stop()  # mid-run: jobs are queued, running and being acknowledged
    time.sleep(DOWN_FOR)  # an outage of known length, not a wait for an event
    server.start()
    client = redis.Redis.from_url(server.url)
    pushed += push_batch(client, keys)
    wait_ran(ledger, 2 * BATCH, worker)

    pushed += push_batch(client, keys)
    killed = client.client_kill_filter(_type="normal", skipme=True)
    wait_ran(ledger, 3 * BATCH, worker)
    assert worker.stop() == 0
    log = worker.output()

    assert killed >= 1
    ran = collections.Counter(event.jid for event in ledger.events("ran"))
    assert sorted(ran) == sorted(pushed)
    assert [jid for jid, times in ran.items() if times > 1] == []  # exactly once
    assert client.llen(keys.queue("default")) == 0
    assert client.zcard(keys.retry) == client.zcard(keys.dead) == 0

    # The outage is logged as one first line per site, not once per thread per second.
    first_lines = re.findall(r"ERROR: (.+?): Redis unavailable", log)
    assert first_lines, log[-4000:]
    per_site = collections.Counter(first_lines)
    assert "heartbeat" in per_site, per_site
    assert max(per_site.values()) <= 2, per_site  # at most once per outage
    assert "heartbeat: Redis available again after" in log
    assert "Traceback" not in log, log[-4000:]
    client.close()
