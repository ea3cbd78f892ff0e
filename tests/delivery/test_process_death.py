"""A worker that dies for good, one that freezes past the threshold, and a job that kills
every process running it (DESIGN §3; gold-standard §3.4 S5, S6, S7, invariants I3, I4, I5)."""

from __future__ import annotations

import json
import signal
import time

import pytest
import redis

from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from delivery.conftest import MakeClient, MakeFleet
from delivery.support import (
    FAST_RECOVERY,
    Execution,
    assert_drained,
    assert_each_ran_once_but_for_deaths,
    enqueue_work,
    executions,
    identity_of,
    unexplained_repeats,
    wait_all_finished,
)
from helpers.workers import Ledger, wait_until

pytestmark = pytest.mark.slow

def _setting(name: str) -> float:
    value = FAST_RECOVERY[name]
    assert isinstance(value, float)
    return value


def _open_runs(ledger: Ledger, pid: int) -> list[Execution]:
    return [run for attempts in executions(ledger).values() for run in attempts
            if run.pid == pid and run.finished is None]


def test_a_killed_workers_jobs_are_recovered_by_the_survivor_within_the_bound(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    job_seconds = 0.4
    fleet = fleet_factory(redis_url, concurrency=4)
    doomed, survivor = fleet.start(), fleet.start()
    doomed_identity = identity_of(doomed)
    jids = enqueue_work(make_client(redis_url), [job_seconds] * 120)
    wait_until(lambda: len(_open_runs(ledger, doomed.pid)) >= 3, 30,
               lambda: f"the doomed worker never got busy:\n{fleet.log_tails()}")

    last_beat = float(redis_client.hget(keys.last_beat, doomed_identity) or 0)
    kill = fleet.kill(doomed)  # for good: no replacement
    in_flight = {run.jid for run in _open_runs(ledger, doomed.pid)}
    wait_until(lambda: redis_client.llen(keys.inprogress(doomed_identity)) == 0, 60,
               lambda: f"the dead worker's jobs were never requeued:\n{fleet.log_tails()}")
    requeued_after = time.time() - kill.at
    wait_all_finished(ledger, jids, 120, fleet)
    fleet.stop_all()

    runs = executions(ledger)
    restarts = [runs[jid][-1].started - kill.at for jid in in_flight]
    bound = (_setting("heartbeat_ttl") + _setting("orphan_threshold")
             + _setting("orphan_check_interval"))
    jitter = 1.2 * _setting("poll_interval")  # orphan checks run at jittered polls
    print(f"\nkill with no restart: {len(in_flight)} jobs in flight; last-beat stamp (whole "
          f"seconds, Redis clock) "
          f"{kill.at - last_beat:.2f} s before the kill; in-progress list requeued "
          f"{requeued_after:.2f} s after the kill; those jobs restarted on the survivor "
          f"{min(restarts):.2f} to {max(restarts):.2f} s after it (bound heartbeat_ttl + "
          f"orphan_threshold + orphan_check_interval = {bound:.1f} s, + {jitter:.1f} s "
          "poll jitter)")
    assert requeued_after <= bound + jitter + 1.0  # 1 s for a loaded test machine
    assert all(run.pid == survivor.pid for jid in in_flight for run in runs[jid][1:])
    assert not unexplained_repeats(runs, fleet.kills)
    assert all(len(runs[jid]) == 1 for jid in set(jids) - in_flight)
    assert f"left in progress by dead process {doomed_identity}" in survivor.output()
    assert_drained(redis_client, keys)


def test_a_frozen_worker_thaws_without_touching_the_recovered_copy(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    fleet = fleet_factory(redis_url)
    # One processor thread: nothing else of the frozen process waits inside Redis.
    frozen = fleet.start(concurrency=1)
    frozen_identity = identity_of(frozen)
    jid = make_client(redis_url).push({"class": "Gated", "args": ["x"]})
    assert jid is not None
    wait_until(lambda: len(executions(ledger).get(jid, [])) == 1, 30, frozen.output)

    frozen.signal(signal.SIGSTOP)
    stopped_at = time.time()
    rescuer = fleet.start(concurrency=2)
    rescuer_identity = identity_of(rescuer)
    wait_until(lambda: len(executions(ledger).get(jid, [])) == 2, 60,
               lambda: f"the frozen worker's job was not recovered:\n{fleet.log_tails()}")
    frozen.signal(signal.SIGCONT)
    fleet.open_gate(frozen)
    wait_until(lambda: executions(ledger)[jid][0].finished is not None, 30, frozen.output)
    assert frozen.stop() == 0  # its late acknowledgement is sent before it exits

    # The thawed process's ack removed nothing of the rescuer, which still runs its copy.
    assert redis_client.llen(keys.inprogress(frozen_identity)) == 0
    held = [json.loads(as_text(raw))["jid"]
            for raw in redis_client.lrange(keys.inprogress(rescuer_identity), 0, -1)]
    assert held == [jid]
    fleet.open_gate(rescuer)
    wait_until(lambda: executions(ledger)[jid][1].finished is not None, 30, rescuer.output)
    fleet.stop_all()

    first, second = executions(ledger)[jid]
    assert (first.pid, second.pid) == (frozen.pid, rescuer.pid)
    assert first.finished is not None and second.finished is not None
    assert first.started < stopped_at < second.started < first.finished < second.finished
    print(f"\nSIGSTOP: frozen {second.started - stopped_at:.2f} s until the copy started "
          f"elsewhere; lease overlap (both runs in progress) {first.finished - second.started:.2f}"
          " s, shown in the ledger as start(frozen) < start(rescuer) < finish(frozen) < "
          "finish(rescuer)")
    assert f"left in progress by dead process {frozen_identity}" in rescuer.output()
    assert_drained(redis_client, keys)


def test_a_poison_pill_goes_to_dead_after_max_orphanings_and_spares_its_neighbours(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    max_orphanings = 3
    # One processor thread each: the pill is the only job its crash interrupts.
    fleet = fleet_factory(redis_url, concurrency=1, max_orphanings=max_orphanings)
    client = make_client(redis_url)
    neighbours = enqueue_work(client, [0.05] * 20)
    poison = client.push({"class": "Poison", "args": []})
    assert poison is not None
    neighbours += enqueue_work(client, [0.05] * 20)
    workers = [fleet.start(wait=False), fleet.start(wait=False)]

    exits: dict[int, int] = {}
    deadline = time.monotonic() + 90
    while redis_client.zcard(keys.dead) == 0 or redis_client.llen(keys.queue("default")):
        assert time.monotonic() < deadline, fleet.log_tails()
        for index, worker in enumerate(workers):
            assert worker.process is not None
            if worker.process.poll() is not None:
                exits[worker.pid] = worker.process.returncode
                workers[index] = fleet.start(wait=False)
        time.sleep(0.1)
    wait_all_finished(ledger, neighbours, 30, fleet)
    fleet.stop_all()

    runs = executions(ledger)
    pill_runs = runs[poison]
    assert len(pill_runs) == max_orphanings + 1
    assert {run.pid for run in pill_runs} == set(exits)
    assert set(exits.values()) == {1}
    [record] = redis_client.zrange(keys.dead, 0, -1)
    assert isinstance(record, bytes)
    dead = json.loads(record)
    assert dead["jid"] == poison
    assert dead["error_class"] == "cogworker.JobOrphanedError"
    assert f"orphaned more than {max_orphanings} times" in dead["error_message"]
    # A neighbour runs again only as delivery.md allows: it finished in a process the pill
    # killed, just before, with its ack not yet written (one thread: at most one a process)
    assert_each_ran_once_but_for_deaths(runs, neighbours, exits)
    earlier = [run for jid in neighbours for run in runs[jid][:-1]]
    assert all(run.finished is not None for run in earlier), earlier  # none was cut short
    assert len({run.pid for run in earlier}) == len(earlier), earlier
    assert_drained(redis_client, keys, dead=1)
    assert not redis_client.exists(keys.orphanings(poison))
    print(f"\npoison pill: ran {len(pill_runs)} times in {len(exits)} processes, then dead: "
          f"{dead['error_message']!r}")
