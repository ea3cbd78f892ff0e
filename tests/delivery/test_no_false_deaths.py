"""A live process is never taken for dead: a job holding the GIL in one C call (under the
supervisor, which beats for its child), full CPU load, a pause shorter than the threshold,
and a Redis outage longer than the threshold. Each test runs a second worker beside the one
under test: its orphan checks are what would steal the jobs. Settings are scaled down (beats
every 0.5 s) so a test takes seconds: what counts is the ratio of the stall to the threshold.
``test_liveness_at_defaults.py`` repeats the stalls at the real defaults."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from cogworker.redis.server import RedisServer
from delivery.conftest import APP_HEADER, MakeClient, StartAppWorker
from delivery.supervised import kill_all_children, started_children, wait_children_started
from delivery.support import executions, finished_jids
from helpers.redis_servers import RedisServerFactory
from helpers.workers import Ledger, WorkerProcess, wait_until

pytestmark = pytest.mark.slow

HOLDING_APP = """
import ctypes

# A PyDLL call keeps the GIL for its whole length: nothing else in the process runs Python.
_LIBC = ctypes.PyDLL(None)


@app.job(name="HoldGil")
def hold_gil(tag, seconds):
    record(tag, "HoldGil", "start")
    _LIBC.sleep(int(seconds))
    record(tag, "HoldGil", "finish")


@app.job(name="Work")
def work(tag, seconds):
    record(tag, "Work", "start")
    time.sleep(seconds)
    record(tag, "Work", "finish")
"""

SCALED = {"heartbeat_interval": 0.5, "heartbeat_ttl": 2.0, "orphan_threshold": 2.0,
          "orphan_check_interval": 1.0, "poll_interval": 0.5, "timeout": 5.0}
STOLEN = "left in progress by dead process"
"""What the thief logs when it recovers a process's jobs (``redis_client`` is asked for by
each test so that its namespace is deleted afterwards)."""


@pytest.fixture
def supervisors() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for supervisor in started:
        supervisor.close()
        kill_all_children(supervisor)


def _runs_of(ledger: Ledger, tag: str) -> int:
    return len(executions(ledger).get(tag, []))


def test_a_job_holding_the_gil_is_not_stolen_from_its_live_supervised_child(
    redis_url: str, redis_client: redis.Redis, ledger: Ledger, app_worker: StartAppWorker,
    make_client: MakeClient,
    supervisors: list[WorkerProcess],
) -> None:
    body = APP_HEADER + HOLDING_APP
    supervisor = app_worker(body, redis_url, "-P", "1", "-c", "2", wait=False, **SCALED)
    supervisors.append(supervisor)
    wait_children_started(supervisor, 1)
    make_client(redis_url).push({"class": "HoldGil", "args": ["hog", 8]})
    wait_until(lambda: _runs_of(ledger, "hog") == 1, 30, supervisor.output)
    child_pid = started_children(supervisor)[0][0]
    thief = app_worker(body, redis_url, "-c", "2", "-q", "elsewhere", **SCALED)
    wait_until(lambda: "hog" in finished_jids(ledger), 60,
               lambda: f"the job never finished:\n{supervisor.output()[-3000:]}")
    assert thief.stop() == 0
    assert supervisor.stop(timeout=60) == 0

    runs = executions(ledger)["hog"]
    assert [(run.pid, run.finished is not None) for run in runs] == [(child_pid, True)]
    assert STOLEN not in thief.output()
    assert "the supervisor beats for it" in supervisor.output()
    held = (runs[0].finished or 0.0) - runs[0].started
    print(f"\nGIL held {held:.1f} s in one C call (threshold "
          f"{SCALED['orphan_threshold']:.0f} s): not stolen, the supervisor vouched")


def test_without_the_supervisor_the_same_job_is_taken_for_dead(
    redis_url: str, redis_client: redis.Redis, ledger: Ledger, app_worker: StartAppWorker,
    make_client: MakeClient,
) -> None:
    """The contrast that shows what the vouch prevents (and that the test above can fail)."""
    body = APP_HEADER + HOLDING_APP
    alone = app_worker(body, redis_url, "-c", "2", **SCALED)
    make_client(redis_url).push({"class": "HoldGil", "args": ["hog", 8]})
    wait_until(lambda: _runs_of(ledger, "hog") == 1, 30, alone.output)
    thief = app_worker(body, redis_url, "-c", "2", **SCALED)
    wait_until(lambda: STOLEN in thief.output(), 60,
               lambda: f"the stalled process's job was never taken:\n{thief.output()}")
    # At least two: while the thief holds the GIL in its run, the first process can take
    # the job back from it in turn (each stalled process looks dead to the other).
    wait_until(lambda: _runs_of(ledger, "hog") >= 2, 30, thief.output)
    assert {run.pid for run in executions(ledger)["hog"][:2]} == {alone.pid, thief.pid}
    thief.close()
    alone.close()


def test_full_cpu_load_does_not_make_a_live_process_look_dead(
    redis_url: str, redis_client: redis.Redis, ledger: Ledger, app_worker: StartAppWorker,
    make_client: MakeClient,
) -> None:
    body = APP_HEADER + HOLDING_APP
    settings = {**SCALED, "heartbeat_ttl": 3.0, "orphan_threshold": 3.0}
    worker = app_worker(body, redis_url, "-c", "4", **settings)
    thief = app_worker(body, redis_url, "-c", "2", "-q", "elsewhere", **settings)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4)]
    try:
        client = make_client(redis_url)
        for index in range(4):
            client.push({"class": "Work", "args": [f"busy-{index}", 8.0]})
        wanted = {f"busy-{index}" for index in range(4)}
        wait_until(lambda: wanted <= finished_jids(ledger), 60, worker.output)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert thief.stop() == 0
    assert worker.stop() == 0
    assert STOLEN not in thief.output()
    assert all(_runs_of(ledger, tag) == 1 for tag in wanted)


def test_a_pause_shorter_than_the_threshold_keeps_the_jobs(
    redis_url: str, redis_client: redis.Redis, ledger: Ledger, app_worker: StartAppWorker,
    make_client: MakeClient,
) -> None:
    body = APP_HEADER + HOLDING_APP
    settings = {**SCALED, "orphan_threshold": 5.0}
    worker = app_worker(body, redis_url, "-c", "2", **settings)
    thief = app_worker(body, redis_url, "-c", "2", "-q", "elsewhere", **settings)
    make_client(redis_url).push({"class": "Work", "args": ["paused", 3.0]})
    wait_until(lambda: _runs_of(ledger, "paused") == 1, 30, worker.output)
    worker.signal(signal.SIGSTOP)  # stop-the-world: 3.5 s, 0.7 of the threshold
    time.sleep(3.5)
    worker.signal(signal.SIGCONT)
    wait_until(lambda: "paused" in finished_jids(ledger), 30, worker.output)
    assert thief.stop() == 0
    assert worker.stop() == 0
    assert STOLEN not in thief.output()
    assert _runs_of(ledger, "paused") == 1


# Beats a second apart and orphan checks five times as often, so that without the wait for
# settled beats the first process back would judge the other before that one beat again.
OUTAGE = {"heartbeat_interval": 1.0, "heartbeat_ttl": 2.5, "orphan_threshold": 3.0,
          "orphan_check_interval": 0.5, "poll_interval": 0.2, "timeout": 5.0}
OUTAGE_SECONDS = 6.0  # twice the threshold: every presence record expires, every beat ages


def _restart(server: RedisServer) -> None:
    server.stop()  # SHUTDOWN: the AOF keeps the in-progress lists and last beats
    time.sleep(OUTAGE_SECONDS)
    server.start()


def _freeze(server: RedisServer) -> None:
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)  # commands sent meanwhile run when it wakes
    time.sleep(OUTAGE_SECONDS)
    os.kill(server.pid, signal.SIGCONT)


@pytest.mark.parametrize("outage", [_restart, _freeze], ids=["restarted", "frozen"])
def test_a_redis_outage_longer_than_the_threshold_makes_no_live_process_look_dead(
    redis_server_factory: RedisServerFactory, ledger: Ledger, app_worker: StartAppWorker,
    make_client: MakeClient, outage: Callable[[RedisServer], None],
) -> None:
    server = redis_server_factory()
    body = APP_HEADER + HOLDING_APP
    workers = [app_worker(body, server.url, "-c", "2", **OUTAGE) for _ in range(2)]
    client = make_client(server.url)
    tags = [f"held-{index}" for index in range(4)]
    for tag in tags:
        client.push({"class": "Work", "args": [tag, OUTAGE_SECONDS + 8.0]})
    wait_until(lambda: all(_runs_of(ledger, tag) == 1 for tag in tags), 30,
               lambda: "".join(worker.output() for worker in workers))
    assert len({executions(ledger)[tag][0].pid for tag in tags}) == 2  # both hold jobs

    outage(server)
    wait_until(lambda: set(tags) <= finished_jids(ledger), 60,
               lambda: "".join(worker.output()[-3000:] for worker in workers))
    logs = ""
    for worker in workers:
        assert worker.stop() == 0
        logs += worker.output()
    assert STOLEN not in logs
    assert all(_runs_of(ledger, tag) == 1 for tag in tags), executions(ledger)
    assert "orphan checks wait" in logs  # the beats broke off and were waited out
