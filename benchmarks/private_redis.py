"""A private redis-server on a unix socket for the short in-process benchmarks (batches,
workflows, status cost): started, pinged until it answers, and stopped afterwards."""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from cogworker.redis.server_binary import find_redis_server


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
