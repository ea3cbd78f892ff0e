"""The delivery suite's process-death tests against the ``streams`` fetch strategy: the
third-party distribution ``examples/cogworker-streams``, installed into the test venv with
``pip install ./examples/cogworker-streams`` (scripts/_venv.sh, scripts/legs.py) and run by
``cogworker run --plugin streams``. Real worker processes, real SIGKILLs and SIGSTOPs: no
job is lost, and a job runs twice only when an earlier run was in flight in a process that
was killed (or frozen past the threshold) — the promises ``reliable`` keeps in
test_kill_storm.py and test_process_death.py, kept by a strategy the engine knows nothing of.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import random
import signal
import time
from typing import cast

import pytest
import redis
from cogworker_streams.names import GROUP

from cogworker.redis.keys import KeySchema
from delivery.conftest import MakeClient, MakeFleet
from delivery.support import (
    FAST_RECOVERY,
    Execution,
    Fleet,
    assert_drained,
    assert_each_ran_once_but_for_deaths,
    cut_short_outside_kills,
    enqueue_work,
    executions,
    finished_jids,
    identity_of,
    unexplained_repeats,
    wait_all_finished,
)
from helpers.workers import Ledger, WorkerProcess, wait_until

pytestmark = pytest.mark.slow

STREAMS = ("--plugin", "streams")
"""How every worker of this module runs: the plugin takes the fetch slot."""


def start(fleet: Fleet, *, wait: bool = True, **settings: object) -> WorkerProcess:
    worker = fleet.start(*STREAMS, wait=wait, **settings)
    if wait:
        assert " fetch=streams " in worker.output(), worker.output()[-2000:]
    return worker


def streams(client: redis.Redis, keys: KeySchema) -> list[bytes]:
    return list(client.scan_iter(match=f"{keys.prefix}:stream:*", count=1000))


def held_by(client: redis.Redis, keys: KeySchema, identity: str) -> list[str]:
    """The raws pending to ``identity``'s consumer in every stream of the namespace."""
    raws: list[str] = []
    for stream in streams(client, keys):
        for row in client.xpending_range(stream, GROUP, "-", "+", 10_000,
                                         consumername=identity):
            entries = cast("list[tuple[bytes, dict[bytes, bytes]]]",
                           client.xrange(stream, row["message_id"], row["message_id"]))
            raws.extend(fields[b"job"].decode() for _, fields in entries)
    return raws


def idle(client: redis.Redis, keys: KeySchema) -> bool:
    """Nothing queued and nothing pending to anyone: every job ran and was settled."""
    return client.llen(keys.queue("default")) == 0 and not any(
        int(client.xpending(stream, GROUP)["pending"]) for stream in streams(client, keys))


def assert_streams_drained(client: redis.Redis, keys: KeySchema) -> None:
    """Every stream empty and nothing pending to anyone (the queues: ``assert_drained``)."""
    left = {stream.decode(): (int(client.xlen(stream)),
                              int(client.xpending(stream, GROUP)["pending"]))
            for stream in streams(client, keys)}
    assert all(state == (0, 0) for state in left.values()), left
    assert left, "no stream was ever used: the workers did not fetch with streams"


def _setting(name: str) -> float:
    value = FAST_RECOVERY[name]
    assert isinstance(value, float)
    return value


def _open_runs(ledger: Ledger, pid: int) -> list[Execution]:
    return [run for attempts in executions(ledger).values() for run in attempts
            if run.pid == pid and run.finished is None]


def test_the_plugin_is_an_installed_distribution_with_its_entry_point() -> None:
    distribution = importlib.metadata.distribution("cogworker-streams")
    [entry_point] = [ep for ep in distribution.entry_points if ep.group == "cogworker"]
    assert (entry_point.name, entry_point.value) == ("streams", "cogworker_streams.plugin")


@pytest.mark.timeout(240)
def test_kill_storm_with_streams_loses_nothing_and_repeats_only_killed_runs(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    jobs = 2000
    seed = int(os.environ.get("COGWORKER_TEST_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    fleet = fleet_factory(redis_url, concurrency=10)
    workers = [start(fleet), start(fleet)]
    jids = enqueue_work(make_client(redis_url), [rng.uniform(0.02, 0.2) for _ in range(jobs)])
    began = time.monotonic()
    next_kill, deadline = began + 2.5, began + 150
    while len(finished_jids(ledger)) < jobs:
        assert time.monotonic() < deadline, (
            f"seed {seed}: {jobs - len(finished_jids(ledger))} jobs unfinished after "
            f"{len(fleet.kills)} kills:\n{fleet.log_tails()}")
        if time.monotonic() >= next_kill and len(fleet.kills) < 8:
            victim = rng.randrange(2)
            fleet.kill(workers[victim])
            workers[victim] = start(fleet, wait=False)
            next_kill += 2.5
        time.sleep(0.1)
    elapsed = time.monotonic() - began
    # A job may finish in a killed process before its ack: its entry waits for recovery,
    # and its requeued copy runs again (a repeat the kill explains).
    wait_until(lambda: idle(redis_client, keys), 30,
               lambda: f"entries of killed workers were never recovered:\n{fleet.log_tails()}")
    fleet.stop_all()

    runs = executions(ledger)
    assert set(runs) == set(jids)
    assert len(fleet.kills) >= 3, f"the jobs drained after {len(fleet.kills)} kills"
    assert not cut_short_outside_kills(runs, fleet.kills)
    bad = unexplained_repeats(runs, fleet.kills)
    assert not bad, f"seed {seed}: repeats no kill explains: {list(bad.items())[:5]}"
    assert_drained(redis_client, keys)
    assert_streams_drained(redis_client, keys)
    repeated = sum(1 for attempts in runs.values() if len(attempts) > 1)
    print(f"\nstreams kill storm (seed {seed}): {jobs} jobs, {len(fleet.kills)} SIGKILLs, "
          f"drained in {elapsed:.1f} s; {repeated} jobs run more than once")


def test_a_killed_streams_workers_jobs_are_recovered_by_the_survivor_within_the_bound(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    fleet = fleet_factory(redis_url, concurrency=4)
    doomed, survivor = start(fleet), start(fleet)
    doomed_identity = identity_of(doomed)
    jids = enqueue_work(make_client(redis_url), [0.4] * 120)
    wait_until(lambda: len(_open_runs(ledger, doomed.pid)) >= 3, 30,
               lambda: f"the doomed worker never got busy:\n{fleet.log_tails()}")

    kill = fleet.kill(doomed)  # for good: no replacement
    in_flight = {run.jid for run in _open_runs(ledger, doomed.pid)}
    assert held_by(redis_client, keys, doomed_identity)
    wait_until(lambda: not held_by(redis_client, keys, doomed_identity), 60,
               lambda: f"the dead worker's entries were never recovered:\n{fleet.log_tails()}")
    requeued_after = time.time() - kill.at
    wait_all_finished(ledger, jids, 120, fleet)
    fleet.stop_all()

    runs = executions(ledger)
    bound = (_setting("heartbeat_ttl") + _setting("orphan_threshold")
             + _setting("orphan_check_interval"))
    jitter = 1.2 * _setting("poll_interval")  # orphan checks run at jittered polls
    print(f"\nstreams, kill with no restart: {len(in_flight)} jobs in flight; entries "
          f"recovered {requeued_after:.2f} s after the kill (bound {bound:.1f} s + "
          f"{jitter:.1f} s poll jitter)")
    assert requeued_after <= bound + jitter + 1.0  # 1 s for a loaded test machine
    assert all(run.pid == survivor.pid for jid in in_flight for run in runs[jid][1:])
    assert not unexplained_repeats(runs, fleet.kills)
    assert all(len(runs[jid]) == 1 for jid in set(jids) - in_flight)
    assert f"left in progress by dead process {doomed_identity}" in survivor.output()
    assert_drained(redis_client, keys)
    assert_streams_drained(redis_client, keys)


def test_a_frozen_streams_worker_thaws_without_touching_the_recovered_copy(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    fleet = fleet_factory(redis_url)
    frozen = start(fleet, concurrency=1)
    frozen_identity = identity_of(frozen)
    jid = make_client(redis_url).push({"class": "Gated", "args": ["x"]})
    assert jid is not None
    wait_until(lambda: len(executions(ledger).get(jid, [])) == 1, 30, frozen.output)

    frozen.signal(signal.SIGSTOP)
    stopped_at = time.time()
    rescuer = start(fleet, concurrency=2)
    rescuer_identity = identity_of(rescuer)
    wait_until(lambda: len(executions(ledger).get(jid, [])) == 2, 60,
               lambda: f"the frozen worker's job was not recovered:\n{fleet.log_tails()}")
    frozen.signal(signal.SIGCONT)
    fleet.open_gate(frozen)
    wait_until(lambda: executions(ledger)[jid][0].finished is not None, 30, frozen.output)
    assert frozen.stop() == 0  # its late acknowledgement is sent before it exits

    # The thawed process's ack removed nothing of the rescuer, which still runs its copy.
    assert held_by(redis_client, keys, frozen_identity) == []
    assert [json.loads(raw)["jid"] for raw in held_by(redis_client, keys, rescuer_identity)] \
        == [jid]
    fleet.open_gate(rescuer)
    wait_until(lambda: executions(ledger)[jid][1].finished is not None, 30, rescuer.output)
    fleet.stop_all()

    first, second = executions(ledger)[jid]
    assert (first.pid, second.pid) == (frozen.pid, rescuer.pid)
    assert first.finished is not None and second.finished is not None
    assert first.started < stopped_at < second.started < first.finished < second.finished
    assert f"left in progress by dead process {frozen_identity}" in rescuer.output()
    assert_drained(redis_client, keys)
    assert_streams_drained(redis_client, keys)


def test_a_poison_pill_under_streams_goes_to_dead_after_max_orphanings(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    max_orphanings = 3
    fleet = fleet_factory(redis_url, concurrency=1, max_orphanings=max_orphanings)
    client = make_client(redis_url)
    neighbours = enqueue_work(client, [0.05] * 20)
    poison = client.push({"class": "Poison", "args": []})
    assert poison is not None
    neighbours += enqueue_work(client, [0.05] * 20)
    workers = [start(fleet, wait=False), start(fleet, wait=False)]

    exits: dict[int, int] = {}
    deadline = time.monotonic() + 90
    while redis_client.zcard(keys.dead) == 0 or redis_client.llen(keys.queue("default")):
        assert time.monotonic() < deadline, fleet.log_tails()
        for index, worker in enumerate(workers):
            assert worker.process is not None
            if worker.process.poll() is not None:
                exits[worker.pid] = worker.process.returncode
                workers[index] = start(fleet, wait=False)
        time.sleep(0.1)
    wait_all_finished(ledger, neighbours, 30, fleet)
    fleet.stop_all()

    runs = executions(ledger)
    assert len(runs[poison]) == max_orphanings + 1
    assert {run.pid for run in runs[poison]} == set(exits)
    [record] = redis_client.zrange(keys.dead, 0, -1)
    assert isinstance(record, bytes)
    dead = json.loads(record)
    assert (dead["jid"], dead["error_class"]) == (poison, "cogworker.JobOrphanedError")
    assert f"orphaned more than {max_orphanings} times" in dead["error_message"]
    # A neighbour finished just before the pill killed its process may run again: its
    # acknowledgement (sent in batches, off the processor thread) can die with it.
    repeated = assert_each_ran_once_but_for_deaths(runs, neighbours, exits)
    assert_drained(redis_client, keys, dead=1)
    assert_streams_drained(redis_client, keys)
    assert not redis_client.exists(keys.orphanings(poison))
    print(f"\npoison pill under streams: {len(runs[poison])} runs in {len(exits)} processes; "
          f"{repeated} of {len(neighbours)} neighbours ran again after a death")
