"""Real ``cogworker run`` processes and the OS signals a supervisor sends them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from worker.support import wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(signal, "SIGTSTP"), reason="POSIX signals"),
]

APP_MODULE = """
import os
import time

import redis

import cogworker

app = cogworker.App(heartbeat_interval=0.2, poll_interval=0.2, concurrency=2)
marks = redis.Redis.from_url(os.environ["TEST_REDIS_URL"])


@app.job(name="Sleepy")
def sleepy(seconds, tag):
    marks.rpush(os.environ["TEST_MARKS_KEY"], "started:" + tag)
    time.sleep(seconds)
    marks.rpush(os.environ["TEST_MARKS_KEY"], "finished:" + tag)
"""


class Worker:
    """One ``python -m cogworker run`` child with its log in a file."""

    def __init__(self, tmp_path: Path, redis_url: str, namespace: str, timeout: float) -> None:
        (tmp_path / "signal_app.py").write_text(textwrap.dedent(APP_MODULE))
        self.log_path = tmp_path / "worker.log"
        self.marks_key = f"{namespace}:test-marks"
        env = {**os.environ, "TEST_REDIS_URL": redis_url, "TEST_MARKS_KEY": self.marks_key,
               "PYTHONUNBUFFERED": "1"}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cogworker", "run", "-A", "signal_app:app",
                 "--redis-url", redis_url, "--namespace", namespace, "-t", str(timeout)],
                cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
            )

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_started(self) -> None:
        assert wait_for(lambda: " started identity=" in self.log or
                        self.process.poll() is not None, timeout=30), self.log
        assert self.process.poll() is None, self.log

    def send(self, signum: int) -> None:
        self.process.send_signal(signum)

    def wait_exit(self, timeout: float = 30) -> int:
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


StartWorker = Callable[..., Worker]


@pytest.fixture
def worker_factory(tmp_path: Path, redis_url: str, namespace: str,
                   redis_client: redis.Redis) -> Iterator[StartWorker]:
    """``worker_factory(timeout=5.0)``: a started worker process, killed after the test."""
    started: list[Worker] = []

    def start(timeout: float = 5.0) -> Worker:
        worker = Worker(tmp_path, redis_url, namespace, timeout)
        started.append(worker)
        worker.wait_started()
        return worker

    yield start
    for worker in started:
        worker.kill()


def push_sleepy(client: redis.Redis, keys: KeySchema, seconds: float, tag: str) -> None:
    payload = (f'{{"class":"Sleepy","args":[{seconds},"{tag}"],"queue":"default",'
               f'"jid":"{tag:0<24}","retry":true,"created_at":1700000000.0}}')
    client.lpush(keys.queue("default"), payload)


def marks(client: redis.Redis, key: str) -> list[str]:
    return [as_text(m) for m in client.lrange(key, 0, -1)]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_term_and_int_drain_running_jobs_then_exit_zero(
    worker_factory: StartWorker, redis_client: redis.Redis, keys: KeySchema, signum: int
) -> None:
    worker = worker_factory(timeout=10.0)
    push_sleepy(redis_client, keys, 1.0, "drained")
    assert wait_for(lambda: "started:drained" in marks(redis_client, worker.marks_key))

    worker.send(signum)

    assert worker.wait_exit() == 0, worker.log
    assert marks(redis_client, worker.marks_key) == ["started:drained", "finished:drained"]
    assert redis_client.llen(keys.queue("default")) == 0
    assert not redis_client.smembers(keys.processes)
    assert "Received stop signal" in worker.log


def test_a_job_still_running_after_the_timeout_is_requeued(
    worker_factory: StartWorker, redis_client: redis.Redis, keys: KeySchema
) -> None:
    worker = worker_factory(timeout=0.5)
    push_sleepy(redis_client, keys, 30.0, "stuck")
    assert wait_for(lambda: "started:stuck" in marks(redis_client, worker.marks_key))

    worker.send(signal.SIGTERM)

    assert worker.wait_exit() == 0, worker.log
    assert "finished:stuck" not in marks(redis_client, worker.marks_key)
    [requeued] = redis_client.lrange(keys.queue("default"), 0, -1)
    assert b'"stuck' in requeued


def test_tstp_quiets_the_process_and_ttin_dumps_its_threads(
    worker_factory: StartWorker, redis_client: redis.Redis, keys: KeySchema
) -> None:
    worker = worker_factory()

    def reported_quiet() -> bool:
        identities = redis_client.smembers(keys.processes)
        return any(redis_client.hget(keys.process(as_text(i)), "quiet") == b"true"
                   for i in identities)

    worker.send(signal.SIGTSTP)
    assert wait_for(reported_quiet), worker.log
    assert "Received quiet signal" in worker.log
    push_sleepy(redis_client, keys, 0.0, "ignored")

    worker.send(signal.SIGTTIN)
    assert wait_for(lambda: "cogworker-heartbeat" in worker.log), worker.log
    assert worker.process.poll() is None  # neither signal stops it

    worker.send(signal.SIGTERM)
    assert worker.wait_exit() == 0, worker.log
    assert "started:ignored" not in marks(redis_client, worker.marks_key)
    assert redis_client.llen(keys.queue("default")) == 1
