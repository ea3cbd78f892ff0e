"""For the short in-process benchmarks (batches, workflows, status cost, limits): a private
redis-server on a unix socket, and a worker run in this process until the jobs are done."""

from __future__ import annotations

import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

import cogworker
from cogworker.redis.server_binary import find_redis_server
from cogworker.worker.launcher import Launcher


@contextmanager
def private_server() -> Iterator[tuple[redis.Redis, str]]:
    """``(client, url)`` of a fresh server without persistence, for the block."""
    with tempfile.TemporaryDirectory() as directory:
        socket = Path(directory) / "redis.sock"
        server = subprocess.Popen([find_redis_server(), "--port", "0", "--unixsocket",
                                   str(socket), "--save", "", "--appendonly", "no"],
                                  stdout=subprocess.DEVNULL)
        try:
            client = redis.Redis(unix_socket_path=str(socket))
            for _ in range(100):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            yield client, f"unix://{socket}"
        finally:
            server.terminate()
            server.wait(10)


def run_worker_until(app: cogworker.App, done: threading.Event,
                     timeout: float = 300) -> tuple[float, float]:
    """Run a worker (the ``Launcher``) in this process until ``done`` is set, then stop it;
    ``(wall seconds, this process's CPU seconds)`` from its start to ``done``."""
    launcher = Launcher(app)
    thread = threading.Thread(target=launcher.run)
    cpu, started = time.process_time(), time.perf_counter()
    thread.start()
    if not done.wait(timeout):
        raise RuntimeError(f"the jobs did not all run within {timeout:.0f} s")
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    launcher.request_stop()
    thread.join(60)
    return elapsed, cpu
