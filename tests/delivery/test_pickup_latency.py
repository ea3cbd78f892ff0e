"""Pickup latency of an idle worker: enqueue to job start, over 200 jobs pushed one at a time.

The figures are printed, never asserted (DESIGN §4: speed is shown by benchmarks; the
benchmark issue holds the targets). The job takes ``time.time()`` first thing and writes it
to the ledger; the enqueue time travels in the job's arguments, read just before the push.
"""

from __future__ import annotations

import time

import pytest
import redis

from cogworker.redis.keys import KeySchema
from delivery.conftest import MakeClient, MakeFleet
from delivery.support import (
    assert_drained,
    assert_each_ran_once,
    executions,
    percentile,
    wait_all_finished,
)
from helpers.workers import Ledger

pytestmark = pytest.mark.slow

JOBS = 200
GAP = 0.02
# The product defaults for everything in the background: an idle worker as deployed.
DEFAULTS = {"heartbeat_interval": 5.0, "heartbeat_ttl": 20.0, "orphan_threshold": 45.0,
            "orphan_check_interval": 15.0, "poll_interval": 5.0, "concurrency": 10}


@pytest.mark.parametrize("queues", ["default", "critical:3,default:2,low:1"],
                         ids=["one-queue", "three-weighted-queues"])
def test_pickup_latency_of_an_idle_worker(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient, queues: str,
) -> None:
    names = [spec.split(":")[0] for spec in queues.split(",")]
    fleet = fleet_factory(redis_url, queues=queues, **DEFAULTS)
    fleet.start()
    client = make_client(redis_url)
    time.sleep(0.5)  # let it settle into its idle wait

    enqueued: dict[str, float] = {}
    for index in range(JOBS):
        at = time.time()
        jid = client.push({"class": "Stamp", "args": [at], "queue": names[index % len(names)]})
        assert jid is not None
        enqueued[jid] = at
        time.sleep(GAP)
    wait_all_finished(ledger, enqueued, 60, fleet)
    fleet.stop_all()

    runs = executions(ledger)
    assert_each_ran_once(runs, enqueued)
    assert_drained(redis_client, keys, names)
    latencies_ms = [(float(runs[jid][0].detail) - at) * 1000 for jid, at in enqueued.items()]
    print(f"\npickup latency, idle worker, {queues} ({JOBS} jobs {GAP * 1000:.0f} ms apart): "
          f"p50 {percentile(latencies_ms, 0.5):.2f} ms, p99 {percentile(latencies_ms, 0.99):.2f}"
          f" ms, max {max(latencies_ms):.2f} ms")
