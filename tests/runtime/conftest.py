"""Fixtures for runtime tests: real ``cogworker run`` subprocesses, a ledger, a pushing app.

``start_worker(body, *args)`` writes ``body`` as the app module ``jobapp`` (it can
``from ledger_client import record``), runs ``cogworker run -A jobapp:app`` on this test's
Redis and namespace with ``args``, and waits for the start-up line. Every worker started
is killed after the test if it is still running.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cogworker.app import App
from helpers.workers import Ledger, WorkerProcess, write_app
from runtime.support import StartWorker, wait_started


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger")


@pytest.fixture
def start_worker(tmp_path: Path, redis_url: str, namespace: str, ledger: Ledger,
                 redis_client: redis.Redis) -> Iterator[StartWorker]:
    """``start_worker(body, *args, url=None, wait=True, env=None)``: a worker process.

    Depends on ``redis_client`` so the namespace is deleted after the test.
    """
    workers: list[WorkerProcess] = []

    def start(body: str, *args: str, url: str | None = None, wait: bool = True,
              env: dict[str, str] | None = None) -> WorkerProcess:
        write_app(tmp_path, body)
        worker = WorkerProcess(
            tmp_path, "jobapp:app",
            ["--redis-url", url or redis_url, "--namespace", namespace, *args],
            env={"COGWORKER_TEST_LEDGER": str(ledger.path), **(env or {})},
        )
        workers.append(worker.start())
        if wait:
            wait_started(worker)
        return worker

    yield start
    for worker in workers:
        worker.close()


@pytest.fixture
def pusher(redis_url: str, namespace: str) -> Iterator[App]:
    """An App in the test process on the same Redis and namespace, to push jobs with."""
    app = App(redis_url=redis_url, namespace=namespace)
    yield app
    app.close()
