"""``cogworker run -P N``: N children under one supervisor, with real processes and signals.

Each test runs the supervisor as a ``cogworker run`` subprocess (``Fleet.start("-P", ...)``)
whose log holds its own lines and its children's. The orphan threshold is long (300 s)
wherever recovery is measured, so only the supervisor's own recovery of a dead child can
put the jobs back as fast as these tests see it.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import redis

from cogworker.redis.keys import KeySchema
from delivery.conftest import APP_HEADER, MakeClient, MakeFleet, StartAppWorker
from delivery.supervised import (
    alive,
    kill_all_children,
    started_children,
    wait_children_started,
    wait_current_child_idle,
)
from delivery.support import (
    Fleet,
    Kill,
    assert_drained,
    assert_each_ran_once,
    enqueue_work,
    executions,
    finished_jids,
    identity_of,
    inprogress_entries,
    running_in,
    unexplained_repeats,
    wait_all_finished,
)
from helpers.workers import Ledger, WorkerProcess, wait_until

pytestmark = pytest.mark.slow

SLOW_ORPHAN_CHECK = {"orphan_threshold": 300.0, "heartbeat_ttl": 30.0,
                     "heartbeat_interval": 0.5}


@pytest.fixture
def supervisors() -> Iterator[list[WorkerProcess]]:
    """Supervisors a test started; every child of theirs is killed afterwards."""
    started: list[WorkerProcess] = []
    yield started
    for supervisor in started:
        supervisor.close()
        kill_all_children(supervisor)


def _supervise(fleet: Fleet, supervisors: list[WorkerProcess], count: int,
               *args: str) -> WorkerProcess:
    supervisor = fleet.start("-P", str(count), "-c", "2", *args, wait=False)
    supervisors.append(supervisor)
    wait_children_started(supervisor, count)
    return supervisor


def _live_children(supervisor: WorkerProcess) -> list[int]:
    return [pid for pid, _slot, _identity in started_children(supervisor) if alive(pid)]


def _stop(supervisor: WorkerProcess) -> None:
    code = supervisor.stop(timeout=60)
    assert code == 0, supervisor.output()[-3000:]
    assert not _live_children(supervisor), "a child outlived its supervisor's stop"


def test_three_children_run_the_jobs_and_are_grouped_under_their_supervisor(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient, supervisors: list[WorkerProcess],
    namespace: str,
) -> None:
    fleet = fleet_factory(redis_url)
    supervisor = _supervise(fleet, supervisors, 3)
    children = {pid for pid, _slot, _identity in started_children(supervisor)}
    jids = enqueue_work(make_client(redis_url), [0.3] * 30)
    wait_all_finished(ledger, jids, 60, fleet)

    listing = subprocess.run(
        [sys.executable, "-m", "cogworker", "ctl", "list", "--json", "--redis-url", redis_url,
         "--namespace", namespace], capture_output=True, text=True, check=True)
    processes = json.loads(listing.stdout)
    supervisor_identity = {p["supervisor"] for p in processes}
    _stop(supervisor)

    runs = executions(ledger)
    assert_each_ran_once(runs, jids)
    assert {run.pid for attempts in runs.values() for run in attempts} == children
    assert len(children) == 3 and supervisor.pid not in children
    assert {p["pid"] for p in processes} == children
    assert len(supervisor_identity) == 1 and f":{supervisor.pid}:" in supervisor_identity.pop()
    assert "supervisor: stop signal received, stopping 3 child(ren)" in supervisor.output()
    assert_drained(redis_client, keys)


def test_a_sigkilled_child_is_replaced_and_its_jobs_run_again_at_once(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient, supervisors: list[WorkerProcess],
) -> None:
    fleet = fleet_factory(redis_url, **SLOW_ORPHAN_CHECK)
    supervisor = _supervise(fleet, supervisors, 3)
    jids = enqueue_work(make_client(redis_url), [0.5] * 60)
    doomed_pid, doomed_slot, doomed_identity = started_children(supervisor)[0]
    wait_until(lambda: running_in(ledger, doomed_pid), 30,
               lambda: f"the child never got busy:\n{supervisor.output()[-3000:]}")

    os.kill(doomed_pid, signal.SIGKILL)
    killed_at = time.time()  # after the signal: a job may start until it lands
    fleet.kills.append(Kill(doomed_pid, killed_at))
    wait_until(lambda: redis_client.llen(keys.inprogress(doomed_identity)) == 0, 30,
               lambda: f"the dead child's jobs were never put back:\n{supervisor.output()}")
    back_after = time.time() - killed_at
    in_flight = {run.jid for attempts in executions(ledger).values() for run in attempts
                 if run.pid == doomed_pid and run.finished is None}
    wait_all_finished(ledger, jids, 120, fleet)
    _stop(supervisor)

    runs = executions(ledger)
    assert in_flight, "no job of the killed child was running at the kill"
    rerun_after = [runs[jid][-1].started - killed_at for jid in in_flight]
    print(f"\nSIGKILLed child under the supervisor: {len(in_flight)} jobs in flight; back on "
          f"their queue {back_after:.3f} s after the kill; running again "
          f"{min(rerun_after):.3f} to {max(rerun_after):.3f} s after it "
          f"(orphan threshold {SLOW_ORPHAN_CHECK['orphan_threshold']:.0f} s)")
    slots = [slot for _pid, slot, _identity in started_children(supervisor)]
    assert slots.count(doomed_slot) == 2, "the killed child's slot was not refilled"
    assert f"slot={doomed_slot} exited unexpectedly (killed by SIGKILL)" in supervisor.output()
    assert f"left in progress by dead child {doomed_identity}" in supervisor.output()
    assert all(len(runs[jid]) == 2 for jid in in_flight)
    assert not unexplained_repeats(runs, fleet.kills)
    assert all(len(runs[jid]) == 1 for jid in set(jids) - in_flight)
    assert_drained(redis_client, keys)


def test_usr2_replaces_the_children_one_at_a_time_while_jobs_keep_flowing(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient, supervisors: list[WorkerProcess],
) -> None:
    fleet = fleet_factory(redis_url, **SLOW_ORPHAN_CHECK)
    supervisor = _supervise(fleet, supervisors, 3)
    first = [pid for pid, _slot, _identity in started_children(supervisor)]
    jids = enqueue_work(make_client(redis_url), [0.2] * 150)
    wait_until(lambda: len(executions(ledger)) >= 10, 30, supervisor.output)
    supervisor.signal(signal.SIGUSR2)
    wait_until(lambda: "phased restart done" in supervisor.output(), 90,
               lambda: f"the restart never finished:\n{supervisor.output()[-4000:]}")
    wait_all_finished(ledger, jids, 120, fleet)
    log = supervisor.output()
    _stop(supervisor)

    children = started_children(supervisor)
    assert len(children) == 6 and not set(first) & {pid for pid, _, _ in children[3:]}
    lines = log.splitlines()

    def where(*parts: str) -> int:
        return next(i for i, line in enumerate(lines) if all(part in line for part in parts))

    # one at a time: a child is asked to go only once the one before it has exited
    for before, after in itertools.pairwise(first):
        exited = where(f"supervisor: child pid={before} ", "(phased restart)")
        assert where(f"replacing child pid={after} ") > exited, "\n".join(lines)
    runs = executions(ledger)
    assert_each_ran_once(runs, jids)  # a graceful restart runs no job twice
    assert {run.pid for attempts in runs.values() for run in attempts} & set(first)
    assert_drained(redis_client, keys)


GROWING_APP = """
HOG = []


@app.job(name="Work")
class Work(cogworker.Job):
    def perform(self, tag, seconds):
        record(self.jid, "Work", "start", tag)
        time.sleep(seconds)
        record(self.jid, "Work", "finish", tag)


@app.job(name="Grow")
class Grow(cogworker.Job):
    # Keeps 200 MB resident in its process (bytes filled in, not a lazily mapped zero page).
    def perform(self):
        record(self.jid, "Grow", "start")
        HOG.append(b"x" * (200 * 1024 * 1024))
        time.sleep(0.5)
        record(self.jid, "Grow", "finish")
"""


def test_a_child_over_max_memory_is_replaced_without_losing_a_job(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, make_client: MakeClient, supervisors: list[WorkerProcess],
) -> None:
    supervisor = app_worker(APP_HEADER + GROWING_APP, redis_url, "-P", "2", "-c", "2",
                            "--max-memory", "150", **SLOW_ORPHAN_CHECK)
    supervisors.append(supervisor)
    wait_children_started(supervisor, 2)
    client = make_client(redis_url)
    grow = client.push({"class": "Grow", "args": []})
    assert grow is not None
    jids = enqueue_work(client, [0.2] * 40)
    wait_until(lambda: "over --max-memory 150 MB" in supervisor.output(), 60,
               lambda: f"no child was recycled:\n{supervisor.output()[-4000:]}")
    wanted = {*jids, grow}
    wait_until(lambda: wanted <= finished_jids(ledger), 120,
               lambda: f"jobs never finished:\n{supervisor.output()[-4000:]}")
    _stop(supervisor)

    runs = executions(ledger)
    assert_each_ran_once(runs, [*jids, grow])  # the recycled child finished its jobs first
    grew_in = runs[grow][0].pid
    assert f"child pid={grew_in} " in supervisor.output().split("over --max-memory")[0]
    assert len(started_children(supervisor)) >= 3
    assert_drained(redis_client, keys)


def test_max_jobs_replaces_a_child_after_its_budget_and_tstp_is_relayed(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient, supervisors: list[WorkerProcess],
) -> None:
    fleet = fleet_factory(redis_url, **SLOW_ORPHAN_CHECK)
    supervisor = _supervise(fleet, supervisors, 1, "--max-jobs", "5")
    jids = enqueue_work(make_client(redis_url), [0.05] * 12)
    wait_all_finished(ledger, jids, 90, fleet)
    wait_children_started(supervisor, 3)
    wait_current_child_idle(supervisor)  # a child stopping at its budget ignores TSTP
    supervisor.signal(signal.SIGTSTP)
    wait_until(lambda: "Received quiet signal" in supervisor.output(), 30,
               lambda: f"TSTP never reached the child:\n{supervisor.output()[-3000:]}")
    _stop(supervisor)

    runs = executions(ledger)
    assert_each_ran_once(runs, jids)
    # each child starts exactly its budget: what it had fetched ahead went back for the next
    per_child = Counter(run.pid for jid in jids for run in runs[jid])
    assert sorted(per_child.values()) == [2, 5, 5], per_child
    assert supervisor.output().count("recycling: 5 jobs started (--max-jobs 5)") == 2
    assert "stopped by itself" in supervisor.output()
    assert "exited unexpectedly" not in supervisor.output()
    assert "supervisor: quiet signal received, relaying TSTP to 1 child(ren)" in \
        supervisor.output()
    assert_drained(redis_client, keys)


def test_max_jobs_without_a_supervisor_starts_exactly_n_and_gives_the_rest_back(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    fleet = fleet_factory(redis_url, **SLOW_ORPHAN_CHECK)
    jids = enqueue_work(make_client(redis_url), [0.05] * 40)
    worker = fleet.start("-c", "4", "--max-jobs", "7", wait=False)
    assert worker.process is not None
    code = worker.process.wait(timeout=60)  # it stops by itself, nobody signals it
    assert code == 0, worker.output()[-3000:]

    runs = executions(ledger)
    started = [jid for jid in jids if runs.get(jid)]
    assert len(started) == 7, worker.output()[-3000:]
    assert "recycling: 7 jobs started (--max-jobs 7); stopping once they finish" in \
        worker.output()
    assert_each_ran_once(runs, started)  # the 7 it started, it finished
    assert redis_client.llen(keys.queue("default")) == 33  # the fetched ahead came back
    assert not inprogress_entries(redis_client, keys)

    drainer = fleet.start("-c", "4")
    wait_all_finished(ledger, jids, 60, fleet)
    assert drainer.stop() == 0
    assert_each_ran_once(executions(ledger), jids)
    assert_drained(redis_client, keys)


def test_a_replacement_on_the_same_host_recovers_a_killed_workers_jobs_at_start(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    fleet_factory: MakeFleet, make_client: MakeClient,
) -> None:
    fleet = fleet_factory(redis_url, concurrency=3, **SLOW_ORPHAN_CHECK)
    doomed = fleet.start()
    doomed_identity = identity_of(doomed)
    jids = enqueue_work(make_client(redis_url), [0.5] * 12)
    wait_until(lambda: running_in(ledger, doomed.pid), 30,
               lambda: f"the worker never got busy:\n{doomed.output()}")
    kill = fleet.kill(doomed)
    in_flight = {run.jid for attempts in executions(ledger).values() for run in attempts
                 if run.pid == doomed.pid and run.finished is None}
    replacement = fleet.start(wait=False)
    started_at = time.time()
    wait_until(lambda: redis_client.llen(keys.inprogress(doomed_identity)) == 0, 60,
               lambda: f"the replacement never recovered them:\n{replacement.output()}")
    back_at = time.time()
    wait_all_finished(ledger, jids, 60, fleet)
    fleet.stop_all()

    print(f"\nSIGKILLed worker, replacement started on the same host: {len(in_flight)} jobs "
          f"in flight back on their queue {back_at - kill.at:.2f} s after the kill, "
          f"{back_at - started_at:.2f} s after the replacement was launched (its start-up "
          f"time; orphan threshold {SLOW_ORPHAN_CHECK['orphan_threshold']:.0f} s)")
    runs = executions(ledger)
    assert in_flight
    assert (f"start-up recovery: process {doomed_identity} on this host is dead"
            in replacement.output())
    assert all(len(runs[jid]) == 2 and runs[jid][1].pid == replacement.pid
               for jid in in_flight)
    assert not unexplained_repeats(runs, fleet.kills)
    assert all(len(runs[jid]) == 1 for jid in set(jids) - in_flight)
    assert_drained(redis_client, keys)
