"""Fixtures for the framework examples: a real worker on an example's folder, on this
test's Redis and namespace, with the example's output files in ``tmp_path``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from helpers.workers import WorkerProcess

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
StartWorker = Callable[..., WorkerProcess]


@pytest.fixture
def example_env(redis_url: str, namespace: str, redis_client: redis.Redis) -> dict[str, str]:
    """What both the web app and the worker get: the test's Redis and namespace
    (``redis_client`` deletes the namespace afterwards)."""
    return {"COGWORKER_REDIS_URL": redis_url, "COGWORKER_NAMESPACE": namespace}


@pytest.fixture
def start_worker(tmp_path: Path, example_env: dict[str, str]) -> Iterator[StartWorker]:
    """``start_worker(example, *args, env=...)``: ``cogworker run -A jobs:app`` on
    ``examples/<example>``, run from ``tmp_path``; waits for its start-up line."""
    workers: list[WorkerProcess] = []

    def start(example: str, *args: str, env: dict[str, str] | None = None) -> WorkerProcess:
        worker = WorkerProcess(tmp_path, "jobs:app", args, env={
            **example_env, "PYTHONPATH": str(EXAMPLES / example), **(env or {})})
        workers.append(worker.start())
        worker.wait_for_output(" started identity=")
        return worker

    yield start
    for worker in workers:
        worker.close()
