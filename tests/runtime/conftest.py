"""Fixtures for runtime tests: real ``cogworker run`` subprocesses, a ledger, a pushing app.

``start_worker(body, *args)`` writes ``body`` as the app module ``jobapp`` (it can
``from ledger_client import record``), runs ``cogworker run -A jobapp:app`` on this test's
Redis and namespace with ``args``, and waits for the start-up line. Every worker started
is killed after the test if it is still running.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from cogworker.app import App
from helpers.workers import Ledger, WorkerProcess, write_app

StartWorker = Callable[..., WorkerProcess]

STARTED = " started identity="


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite")


@pytest.fixture
def start_worker(tmp_path: Path, redis_url: str, namespace: str, ledger: Ledger,
                 redis_client: redis.Redis) -> Iterator[StartWorker]:
    """``start_worker(body, *args, url=None, wait=True)``: a running worker process.

    Depends on ``redis_client`` so the namespace is deleted after the test.
    """
    workers: list[WorkerProcess] = []

    def start(body: str, *args: str, url: str | None = None, wait: bool = True,
              ) -> WorkerProcess:
        write_app(tmp_path, body)
        worker = WorkerProcess(
            tmp_path, "jobapp:app",
            ["--redis-url", url or redis_url, "--namespace", namespace, *args],
            env={"COGWORKER_TEST_LEDGER": str(ledger.path)},
        )
        workers.append(worker.start())
        if wait:
            wait_started(worker)
        return worker

    yield start
    for worker in workers:
        worker.close()


def wait_started(worker: WorkerProcess) -> None:
    """Wait for the start-up line; fails with the log if the process exits first."""
    from helpers.workers import wait_until

    assert worker.process is not None
    process = worker.process
    wait_until(lambda: STARTED in worker.output() or process.poll() is not None, 30,
               lambda: f"the worker never started:\n{worker.output()[-3000:]}")
    assert process.poll() is None, f"the worker exited:\n{worker.output()[-3000:]}"


@pytest.fixture
def pusher(redis_url: str, namespace: str) -> Iterator[App]:
    """An App in the test process on the same Redis and namespace, to push jobs with."""
    app = App(redis_url=redis_url, namespace=namespace)
    yield app
    app.close()


def identity_of(worker: WorkerProcess) -> str:
    """The identity from the worker's start-up line."""
    for line in worker.output().splitlines():
        if STARTED in line:
            return line.split(STARTED, 1)[1].split()[0]
    raise AssertionError(f"no start-up line in the worker log:\n{worker.output()[-3000:]}")


def wait_exit(worker: WorkerProcess, timeout: float = 30.0) -> int:
    """Wait for the worker to exit by itself (no signal sent); returns its exit status."""
    assert worker.process is not None
    try:
        return worker.process.wait(timeout)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"the worker did not exit in {timeout}s:\n{worker.output()[-3000:]}") from exc
