"""A worker killed with SIGKILL mid-job under reliable fetch: the lock survives the crash and
is released when the recovered job finishes (real ``cogworker run`` processes)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

import cogworker
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, WorkerProcess, wait_until, write_app
from unique.unique_helpers import lock_keys, owner

APP = """
    import os
    import time

    import cogworker
    from ledger_client import record

    app = cogworker.App(
        redis_url=os.environ["TEST_REDIS_URL"], namespace=os.environ["TEST_NAMESPACE"],
        fetch="reliable", concurrency=2, heartbeat_interval=0.2, heartbeat_ttl=1.0,
        orphan_threshold=1.0, orphan_check_interval=0.5, poll_interval=0.2,
    )


    def run(jid, name):
        record(jid, name, "start")
        if os.environ.get("HANG") == "1":
            time.sleep(600)
        record(jid, name, "finish")


    @app.job(name="Slow")
    class Slow(cogworker.Job):
        unique = "until_executed"

        def perform(self, account):
            run(self.jid, "Slow")


    @app.job(name="Exclusive")
    class Exclusive(cogworker.Job):
        unique = "while_executing"

        def perform(self, account):
            run(self.jid, "Exclusive")
    """


@pytest.fixture
def workers() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger")


@pytest.fixture
def start_worker(tmp_path: Path, redis_url: str, namespace: str, ledger: Ledger,
                 workers: list[WorkerProcess]) -> Callable[..., WorkerProcess]:
    """``start_worker(hang=False)``: a ``cogworker run`` on the app above."""
    directory = write_app(tmp_path / "app", APP)
    env = {"TEST_REDIS_URL": redis_url, "TEST_NAMESPACE": namespace,
           "COGWORKER_TEST_LEDGER": str(ledger.path)}

    def start(hang: bool = False) -> WorkerProcess:
        worker = WorkerProcess(directory, "jobapp:app", env={**env, "HANG": "1" if hang else ""})
        workers.append(worker.start())
        return worker

    return start


@pytest.mark.slow
def test_a_killed_workers_job_keeps_its_lock_and_releases_it_after_recovery(
    redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema,
    ledger: Ledger, start_worker: Callable[..., WorkerProcess],
) -> None:
    client_app = cogworker.App(redis_url=redis_url, namespace=namespace)
    try:
        job = {"class": "Slow", "args": [1], "unique": "until_executed"}
        jid = client_app.push(job)
        assert jid is not None
        [key] = lock_keys(redis_client, keys)

        doomed = start_worker(hang=True)
        wait_until(lambda: ledger.count("start") == 1, 30,
                   lambda: f"the job never started:\n{doomed.output()[-3000:]}")
        doomed.kill()
        assert owner(redis_client, key) == jid
        assert client_app.push(job) is None  # still a duplicate while it waits for recovery

        rescuer = start_worker()
        wait_until(lambda: ledger.count("finish") == 1, 60,
                   lambda: f"the job was not recovered:\n{rescuer.output()[-3000:]}")
        wait_until(lambda: lock_keys(redis_client, keys) == [], 20,
                   lambda: f"the lock was not released:\n{rescuer.output()[-3000:]}")
        assert [event.jid for event in ledger.events()] == [jid, jid, jid]
        assert rescuer.stop() == 0
    finally:
        client_app.close()


@pytest.mark.slow
def test_a_recovered_while_executing_job_runs_under_its_own_run_lock(
    redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema,
    ledger: Ledger, start_worker: Callable[..., WorkerProcess],
) -> None:
    client_app = cogworker.App(redis_url=redis_url, namespace=namespace)
    try:
        jid = client_app.push({"class": "Exclusive", "args": [1], "unique": "while_executing"})
        doomed = start_worker(hang=True)
        wait_until(lambda: ledger.count("start") == 1, 30,
                   lambda: f"the job never started:\n{doomed.output()[-3000:]}")
        doomed.kill()
        [run_key] = lock_keys(redis_client, keys)
        assert run_key.endswith(":run")
        assert owner(redis_client, run_key) == jid

        # Not postponed until the dead worker's run lock expires: the lock is its own.
        rescuer = start_worker()
        wait_until(lambda: ledger.count("finish") == 1, 60,
                   lambda: f"the job was not recovered:\n{rescuer.output()[-3000:]}")
        wait_until(lambda: lock_keys(redis_client, keys) == [], 20,
                   lambda: f"the run lock was not released:\n{rescuer.output()[-3000:]}")
        assert "postponed" not in rescuer.output()
        assert rescuer.stop() == 0
    finally:
        client_app.close()
