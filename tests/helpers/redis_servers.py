"""Helpers around private redis-servers and real processes in tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable

import redis

from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from cogworker.redis.server_process import wait_for_exit

RedisServerFactory = Callable[..., RedisServer]
"""The ``redis_server_factory`` fixture: takes ``RedisServer`` keyword arguments."""


def demotable_broker(
    factory: RedisServerFactory, keys: KeySchema
) -> tuple[RedisBroker, Callable[[], None]]:
    """A broker on a private primary, and a call that makes it a read-only replica of
    another private server (Redis then answers writes with READONLY). Close the broker."""
    primary = factory(appendonly=False)
    node = factory(appendonly=False)
    broker = RedisBroker(make_client(node.url, max_connections=2), keys)

    def demote() -> None:
        broker.client.replicaof("127.0.0.1", primary.port)

    return broker, demote


def delete_namespace(client: redis.Redis, namespace: str) -> None:
    """Delete every key of ``namespace`` (plain, cluster hash-tagged and cron keys)."""
    for pattern in (f"{namespace}:*", f"{{{namespace}}}:*", f"{namespace}:periodic:*"):
        batch: list[bytes] = []
        for key in client.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) >= 500:
                client.delete(*batch)
                batch.clear()
        if batch:
            client.delete(*batch)


def run_python(code: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) in a fresh interpreter of this environment."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, check=check, timeout=60,
    )


def wait_until_gone(pid: int, timeout: float = 15.0) -> bool:
    """Wait for a process to end: a bounded wait for an event, not a timing assertion."""
    return wait_for_exit(pid, timeout)
