"""Stand-ins for the Manager and the worker handle (never for Redis), and small helpers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import redis

from cogworker.core.broker import WorkRecord
from cogworker.core.payload import Payload
from cogworker.redis.server import RedisServer
from cogworker.redis.server_process import free_port

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.core.settings import Settings


class FakeManager:
    """Implements :class:`cogworker.worker.contracts.ManagerControls` and records calls."""

    def __init__(self, busy: int = 0) -> None:
        self._quiet = threading.Event()
        self._busy = busy
        self.reconciles = 0
        self.dead: list[tuple[list[str], str]] = []
        self.performing: list[Payload] = []

    def quiet(self) -> None:
        self._quiet.set()

    def unquiet(self) -> None:
        self._quiet.clear()

    @property
    def is_quiet(self) -> bool:
        return self._quiet.is_set()

    @property
    def busy(self) -> int:
        return self._busy

    def performing_jobs(self) -> list[Payload]:
        return list(self.performing)

    def reconcile(self) -> None:
        self.reconciles += 1

    def take_stray_check(self) -> bool:
        return False

    def handle_dead_jobs(self, stored_raws: list[str], reason: str) -> None:
        self.dead.append((list(stored_raws), reason))

    def work_entries(self) -> dict[str, WorkRecord]:
        return {}


class FakeWorker:
    """A :class:`cogworker.core.hookspecs.WorkerHandle` over an app and a fake manager."""

    def __init__(self, app: App, manager: FakeManager) -> None:
        self.app = app
        self.identity = app.identity
        self._manager = manager

    @property
    def settings(self) -> Settings:
        return self.app.settings

    def performing_jobs(self) -> list[Payload]:
        return self._manager.performing_jobs()


def wait_for(condition: Callable[[], object], timeout: float = 10.0,
              interval: float = 0.02) -> bool:
    """Wait until ``condition()`` is true; a bounded wait for an event, not a timing check."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())


def client_of(server: RedisServer) -> redis.Redis:
    """A client of a server a test started (closed by the caller or at exit)."""
    return redis.Redis.from_url(server.url)


def make_replica_of_nothing(server: RedisServer, *, serve_reads: bool) -> None:
    """Turn ``server`` into a replica of a master that does not exist, so Redis is
    unavailable without connection timeouts: writes fail with READONLY at once, and with
    ``serve_reads=False`` reads fail with MASTERDOWN too. :func:`promote` undoes it."""
    client = client_of(server)
    try:
        client.config_set("replica-serve-stale-data", "yes" if serve_reads else "no")
        client.replicaof("127.0.0.1", free_port())
    finally:
        client.close()


def promote(server: RedisServer) -> None:
    """Make ``server`` a writable master again (``REPLICAOF NO ONE``)."""
    client = client_of(server)
    try:
        client.replicaof("NO", "ONE")
        client.config_set("replica-serve-stale-data", "yes")
    finally:
        client.close()
