"""Cron slots across real ``cogworker run`` processes, checked from a ledger the job writes.

Every process ticks (every 0.1 s here); the ledger is a directory of files outside the Redis
under test. A slot "fired" when a job for it ran (a ledger event) or is still queued; a slot fired
twice would show two different jids (a job recovered after a crash runs again with the
same jid, which is at-least-once delivery, not a second firing).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cogworker.redis.keys import KeySchema
from helpers.workers import Event, Ledger, WorkerProcess, wait_until, write_app

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals"),
]

APP = """
import os
import time

import cogworker
from ledger_client import record

app = cogworker.App()


@app.job(name="cron.Record")
class Record(cogworker.Job):
    def perform(self, seconds):
        slot = self.job.get("periodic_slot")
        record(self.jid, "cron.Record", "start", slot)
        time.sleep(seconds)
        record(self.jid, "cron.Record", "end", slot)


app.periodic("* * * * * *", Record, args=[float(os.environ["COGWORKER_TEST_SLEEP"])],
             unique=os.environ.get("COGWORKER_TEST_UNIQUE") or None)
"""

STARTED = " started identity="


class Fleet:
    """Worker processes on one app directory, ledger and namespace."""

    def __init__(self, directory: Path, redis_url: str, namespace: str, *, sleep: float,
                 unique: str = "") -> None:
        self.directory = write_app(directory, APP, module="cronapp")
        self.ledger = Ledger(directory / "ledger")
        self.env = {
            "COGWORKER_REDIS_URL": redis_url, "COGWORKER_NAMESPACE": namespace,
            "COGWORKER_HEARTBEAT_INTERVAL": "0.5", "COGWORKER_HEARTBEAT_TTL": "2",
            "COGWORKER_POLL_INTERVAL": "0.5", "COGWORKER_ORPHAN_CHECK_INTERVAL": "1",
            "COGWORKER_ORPHAN_THRESHOLD": "3", "COGWORKER_CONCURRENCY": "4",
            "COGWORKER_TIMEOUT": "3",
            "COGWORKER_PLUGIN_OPTIONS": json.dumps({"periodic": {"tick_interval": 0.1}}),
            "COGWORKER_TEST_LEDGER": str(self.ledger.path),
            "COGWORKER_TEST_SLEEP": str(sleep), "COGWORKER_TEST_UNIQUE": unique,
            "PYTHONPATH": os.pathsep.join(
                part for part in (str(directory), os.environ.get("PYTHONPATH")) if part),
        }
        self.workers: list[WorkerProcess] = []

    def start(self, count: int = 1) -> list[WorkerProcess]:
        started = [WorkerProcess(self.directory, "cronapp:app", env=self.env).start()
                   for _ in range(count)]
        for worker in started:
            worker.wait_for_output(STARTED)
        self.workers.extend(started)
        return started

    def by_pid(self, pid: int) -> WorkerProcess:
        return next(worker for worker in self.workers if worker.pid == pid)

    def stop(self) -> None:
        for worker in self.workers:
            if worker.process is not None and worker.process.poll() is None:
                worker.signal(signal.SIGTERM)
        for worker in self.workers:
            worker.stop()

    def close(self) -> None:
        for worker in self.workers:
            worker.close()

    def starts(self) -> list[Event]:
        return self.ledger.events("start")

    def wait_for_slot(self, slot: float, timeout: float = 40.0) -> None:
        wait_until(lambda: any(int(e.detail) >= slot for e in self.starts()), timeout,
                   lambda: f"no run for slot {slot} yet:\n{self.workers[0].output()[-3000:]}")


@pytest.fixture
def fleet_factory(tmp_path: Path, redis_url: str, namespace: str,
                  redis_client: redis.Redis) -> Iterator[list[Fleet]]:
    fleets: list[Fleet] = []
    yield fleets
    for fleet in fleets:
        fleet.close()


def fired_slots(fleet: Fleet, client: redis.Redis, keys: KeySchema) -> dict[int, set[str]]:
    """slot → jids, from the ledger and from jobs still waiting on the queue."""
    fired: dict[int, set[str]] = {}
    for event in fleet.starts():
        fired.setdefault(int(event.detail), set()).add(event.jid)
    for raw in client.lrange(keys.queue("default"), 0, -1):
        job = json.loads(raw)
        fired.setdefault(int(job["periodic_slot"]), set()).add(job["jid"])
    return fired


def test_three_processes_fire_every_second_slot_exactly_once(
    fleet_factory: list[Fleet], tmp_path: Path, redis_url: str, namespace: str,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    fleet = Fleet(tmp_path / "fleet", redis_url, namespace, sleep=0.0)
    fleet_factory.append(fleet)
    fleet.start(3)
    first = int(time.time()) + 2  # every ticker is ready by then
    fleet.wait_for_slot(first + 10)
    fleet.stop()

    fired = fired_slots(fleet, redis_client, keys)
    twice = {slot: jids for slot, jids in fired.items() if len(jids) > 1}
    assert twice == {}
    last = max(fired)
    assert [slot for slot in range(first, last + 1) if slot not in fired] == []
    assert len({event.pid for event in fleet.starts()}) >= 2  # the work was shared


def test_a_process_killed_and_restarted_partway_never_causes_a_slot_twice(
    fleet_factory: list[Fleet], tmp_path: Path, redis_url: str, namespace: str,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    fleet = Fleet(tmp_path / "fleet", redis_url, namespace, sleep=0.3)
    fleet_factory.append(fleet)
    victim, *_ = fleet.start(3)
    first = int(time.time()) + 2
    fleet.wait_for_slot(first + 4)

    killed_at = time.time()
    victim.kill()
    fleet.start(1)
    fleet.wait_for_slot(time.time() + 6)
    fleet.stop()

    fired = fired_slots(fleet, redis_client, keys)
    assert {slot: jids for slot, jids in fired.items() if len(jids) > 1} == {}
    missing = [slot for slot in range(first, max(fired) + 1) if slot not in fired]
    # The one documented loss: a process killed between its won claim and its push.
    assert all(abs(slot - killed_at) <= 1.5 for slot in missing), (missing, killed_at)
    assert len(missing) <= 1


def runs(events: list[Event], killed_at: float) -> list[tuple[str, float, float]]:
    """(jid, start, end) per run; a run cut short by the kill ends at ``killed_at``."""
    result: list[tuple[str, float, float]] = []
    open_runs: dict[str, float] = {}
    for event in sorted(events, key=lambda e: e.at):
        if event.event == "start":
            if event.jid in open_runs:  # started again after recovery: the first was killed
                result.append((event.jid, open_runs[event.jid], killed_at))
            open_runs[event.jid] = event.at
        elif event.event == "end":
            result.append((event.jid, open_runs.pop(event.jid), event.at))
    result.extend((jid, start, killed_at) for jid, start in open_runs.items())
    return result


def test_until_executed_never_overlaps_runs_even_when_the_runner_is_killed(
    fleet_factory: list[Fleet], tmp_path: Path, redis_url: str, namespace: str,
) -> None:
    fleet = Fleet(tmp_path / "fleet", redis_url, namespace, sleep=2.5, unique="until_executed")
    fleet_factory.append(fleet)
    fleet.start(2)
    wait_until(lambda: len({e.jid for e in fleet.starts()}) >= 2, 40,
               lambda: f"no second run:\n{fleet.workers[0].output()[-3000:]}")
    seen = {e.jid for e in fleet.starts()}
    wait_until(lambda: {e.jid for e in fleet.starts()} - seen != set(), 40, "no third run")
    target = next(e for e in fleet.starts() if e.jid not in seen)

    killed_at = time.time()
    fleet.by_pid(target.pid).kill()
    ended = {e.jid for e in fleet.ledger.events("end")}
    wait_until(lambda: target.jid in {e.jid for e in fleet.ledger.events("end")}, 60,
               lambda: f"the killed run was not recovered:\n{fleet.workers[1].output()[-3000:]}")
    recovered_end = max(e.at for e in fleet.ledger.events("end") if e.jid == target.jid)
    wait_until(lambda: any(e.at > recovered_end for e in fleet.starts()), 40,
               "the entry did not fire again after the recovered run")
    fleet.stop()

    all_runs = runs(fleet.ledger.events(), killed_at)
    overlapping = [(a, b) for a in all_runs for b in all_runs
                   if a[0] != b[0] and a[1] < b[1] < a[2]]
    assert overlapping == []
    assert sum(1 for e in fleet.starts() if e.jid == target.jid) == 2  # killed, then recovered
    assert target.jid not in ended
