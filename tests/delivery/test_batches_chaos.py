"""Batches under a kill storm: 20 batches of 200 jobs (20 to 200 ms each) on 3 worker
processes, one SIGKILLed every 3 s and replaced. Every job completes, every batch's
``complete`` and ``success`` callbacks are pushed exactly once (one callback jid each,
from the ledger outside Redis; a callback *run* repeats only after a kill of the process
running it, as any job's), nothing is left pending in Redis, and the time from each
batch's last job end to its callbacks is printed."""

from __future__ import annotations

import os
import random
import statistics
import time
from collections import defaultdict

import pytest
import redis

import cogworker
from cogworker.redis.keys import KeySchema
from delivery.conftest import APP_HEADER, StartAppWorker
from delivery.support import Kill, assert_drained, executions, unexplained_repeats
from helpers.workers import Ledger, WorkerProcess

pytestmark = pytest.mark.liveness

BATCHES, JOBS = 20, 200
SHORTEST, LONGEST = 0.02, 0.2
KILL_EVERY = 3.0
WORKERS = 3
SETTINGS = {"concurrency": 10}
QUEUE_ARGS = ("-q", "callbacks", "-q", "default", "--strict")

APP = APP_HEADER + '''
@app.job(name="step")
def step(index, seconds):
    job = cogworker.current_job().job
    record(job["jid"], "step", "start", job["bid"])
    time.sleep(seconds)
    record(job["jid"], "step", "finish", job["bid"])


def callback(kind):
    def run(bid, counts):
        jid = cogworker.current_job().jid
        record(jid, kind, "start", bid)
        assert counts["pending"] == 0 or kind == "on_complete", counts
        record(jid, kind, "finish", bid)
    return run


app.job(name="on_complete")(callback("on_complete"))
app.job(name="on_success")(callback("on_success"))
'''


def client(redis_url: str, namespace: str) -> cogworker.App:
    app = cogworker.App(redis_url=redis_url, namespace=namespace)
    for name in ("step", "on_complete", "on_success"):
        app.job(name=name)(lambda *args: None)
    return app


def push_batches(app: cogworker.App, rng: random.Random) -> dict[str, list[str]]:
    jids: dict[str, list[str]] = {}
    for number in range(BATCHES):
        with app.batch(f"chaos {number}", on_complete="on_complete", on_success="on_success",
                       callback_queue="callbacks") as batch:
            for index in range(JOBS):
                batch.push({"class": "step", "args": [index, rng.uniform(SHORTEST, LONGEST)]})
        jids[batch.bid] = list(batch.jids)
    return jids


def storm(start: StartAppWorker, redis_url: str, ledger: Ledger, jids: dict[str, list[str]],
          rng: random.Random, seed: int) -> list[Kill]:
    """Kill one worker every KILL_EVERY seconds until every batch has both callbacks."""
    workers: list[WorkerProcess] = [start(APP, redis_url, *QUEUE_ARGS, **SETTINGS)
                                    for _ in range(WORKERS)]
    kills: list[Kill] = []
    deadline = time.monotonic() + 200
    next_kill = time.monotonic() + KILL_EVERY
    wanted = {(kind, bid) for bid in jids for kind in ("on_complete", "on_success")}
    while {(e.name, e.detail) for e in ledger.events("finish") if e.name != "step"} < wanted:
        assert time.monotonic() < deadline, (f"seed {seed}: not done after {len(kills)} "
                                             f"kills:\n{workers[-1].output()[-3000:]}")
        if time.monotonic() >= next_kill:
            victim = workers.pop(rng.randrange(len(workers)))
            victim.kill()
            kills.append(Kill(victim.pid, time.time()))  # after: a job may start until then
            workers.append(start(APP, redis_url, *QUEUE_ARGS, wait=False, **SETTINGS))
            next_kill = time.monotonic() + KILL_EVERY
        time.sleep(0.05)
    for worker in workers:
        worker.stop()
    return kills


def latencies(ledger: Ledger, jids: dict[str, list[str]]) -> dict[str, list[float]]:
    """Seconds from each batch's last job end to the start of each of its callbacks. A
    job's end is its first finished run (a run killed after its settle runs again, and
    that second run ends after the callbacks it made due)."""
    first_end: dict[str, tuple[str, float]] = {}
    firsts: dict[tuple[str, str], float] = {}
    for event in ledger.events():
        if event.name == "step" and event.event == "finish":
            first_end.setdefault(event.jid, (event.detail, event.at))
        elif event.name != "step" and event.event == "start":
            firsts.setdefault((event.name, event.detail), event.at)
    last_end: dict[str, float] = defaultdict(float)
    for bid, at in first_end.values():
        last_end[bid] = max(last_end[bid], at)
    return {kind: [firsts[(kind, bid)] - last_end[bid] for bid in jids]
            for kind in ("on_complete", "on_success")}


@pytest.mark.timeout(300)
def test_batches_survive_a_kill_storm_with_each_callback_pushed_once(
        redis_url: str, redis_client: redis.Redis, keys: KeySchema, namespace: str,
        ledger: Ledger, app_worker: StartAppWorker) -> None:
    seed = int(os.environ.get("COGWORKER_TEST_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    app = client(redis_url, namespace)
    try:
        jids = push_batches(app, rng)
        began = time.monotonic()
        kills = storm(app_worker, redis_url, ledger, jids, rng, seed)
        took = time.monotonic() - began
        runs = executions(ledger)
        finished = {jid for jid, attempts in runs.items() if any(r.finished for r in attempts)}
        missing = {jid for members in jids.values() for jid in members} - finished
        assert not missing, f"seed {seed}: {len(missing)} jobs never completed"
        assert unexplained_repeats(runs, kills) == {}, f"seed {seed}"
        pushed = defaultdict(set)
        for event in ledger.events("start"):
            if event.name != "step":
                pushed[(event.name, event.detail)].add(event.jid)
        assert {key: len(found) for key, found in pushed.items()} == {
            (kind, bid): 1 for bid in jids for kind in ("on_complete", "on_success")}
        for bid in jids:
            info = app.batches.get(bid)
            assert info is not None and info.state == "success", (seed, info)
            assert redis_client.scard(keys.batch_part(bid, "pending")) == 0
            assert redis_client.scard(keys.batch_part(bid, "unrun")) == 0
        assert_drained(redis_client, keys, queues=("default", "callbacks"))
        report = latencies(ledger, jids)
        print(f"\nseed {seed}: {BATCHES}x{JOBS} jobs in {took:.1f} s, {len(kills)} kills; "
              f"last job end -> callback start (s):")
        for kind, values in report.items():
            print(f"  {kind}: min {min(values):.3f} median {statistics.median(values):.3f} "
                  f"max {max(values):.3f}")
    finally:
        app.close()
