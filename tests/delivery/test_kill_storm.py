"""Kill storm: two worker processes drain 2,000 jobs while one of them is SIGKILLed every
couple of seconds and replaced. No job is lost, and a job runs twice only when an earlier
run was in flight in a killed process (DESIGN §3; gold-standard §3.4 S3, invariants I1, I2).
"""

from __future__ import annotations

import os
import random
import time

import pytest
import redis

from cogworker.redis.keys import KeySchema
from delivery.conftest import MakeClient, MakeFleet
from delivery.support import (
    assert_drained,
    cut_short_outside_kills,
    enqueue_work,
    executions,
    finished_jids,
    unexplained_repeats,
)
from helpers.workers import Ledger

pytestmark = pytest.mark.slow

JOBS = 2000
SHORTEST, LONGEST = 0.02, 0.2
KILL_EVERY = 2.5
MIN_KILLS = 3
MAX_KILLS = 8
STORM = {"concurrency": 10}
"""Over :data:`~delivery.support.FAST_RECOVERY`: orphan_threshold 2 s, heartbeat_ttl 2 s,
heartbeat_interval 0.5 s, orphan_check_interval 1 s, poll_interval 0.5 s."""


@pytest.mark.timeout(240)
def test_kill_storm_loses_nothing_and_repeats_only_killed_runs(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    seed = int(os.environ.get("COGWORKER_TEST_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    fleet = fleet_factory(redis_url, **STORM)
    workers = [fleet.start(), fleet.start()]
    jids = enqueue_work(make_client(redis_url),
                        [rng.uniform(SHORTEST, LONGEST) for _ in range(JOBS)])
    began = time.monotonic()

    next_kill = began + KILL_EVERY
    deadline = began + 150
    while len(finished_jids(ledger)) < JOBS:
        assert time.monotonic() < deadline, (
            f"seed {seed}: {JOBS - len(finished_jids(ledger))} jobs unfinished after "
            f"{len(fleet.kills)} kills:\n{fleet.log_tails()}")
        if time.monotonic() >= next_kill and len(fleet.kills) < MAX_KILLS:
            victim = rng.randrange(2)
            fleet.kill(workers[victim])
            workers[victim] = fleet.start(wait=False)
            next_kill += KILL_EVERY
        time.sleep(0.1)
    elapsed = time.monotonic() - began
    fleet.stop_all()

    runs = executions(ledger)
    assert set(runs) == set(jids)
    assert len(fleet.kills) >= MIN_KILLS, f"the jobs drained after {len(fleet.kills)} kills"
    assert not cut_short_outside_kills(runs, fleet.kills)
    bad = unexplained_repeats(runs, fleet.kills)
    assert not bad, f"seed {seed}: repeats no kill explains: {list(bad.items())[:5]}"
    killed = {kill.pid for kill in fleet.kills}
    repeated = {jid: attempts for jid, attempts in runs.items() if len(attempts) > 1}
    cut_short = sum(1 for attempts in runs.values() for run in attempts
                    if run.pid in killed and run.finished is None)
    finished_unacked = sum(1 for attempts in repeated.values() for run in attempts[:-1]
                           if run.finished is not None)
    assert_drained(redis_client, keys)
    print(f"\nkill storm (seed {seed}): {JOBS} jobs, {len(fleet.kills)} SIGKILLs, drained in "
          f"{elapsed:.1f} s; {cut_short} runs cut short by a kill, {len(repeated)} jobs run "
          f"more than once ({finished_unacked} of them had finished but were not yet "
          f"acknowledged when killed)")
