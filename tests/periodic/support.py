"""Stand-ins for the clock and the Manager (never for Redis), and small readers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import redis

from cogworker.app import App
from cogworker.core.broker import WorkRecord
from cogworker.core.payload import Payload, decode
from helpers.redis_access import client_of, keys_of

# 2024-05-01 10:00:00 UTC, a Wednesday: far from any DST change.
START = 1_714_557_600.0


class FakeClock:
    """Wall clock and monotonic clock that only move when told to."""

    def __init__(self, now: float = START) -> None:
        self.now = now
        self.mono = 1_000.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.mono += seconds


class StandInManager:
    """The Manager controls the ticker reads (quiet only)."""

    def __init__(self) -> None:
        self._quiet = threading.Event()
        self.quiet_checks = 0

    def quiet(self) -> None:
        self._quiet.set()

    def unquiet(self) -> None:
        self._quiet.clear()

    @property
    def is_quiet(self) -> bool:
        self.quiet_checks += 1
        return self._quiet.is_set()

    @property
    def busy(self) -> int:
        return 0

    def performing_jobs(self) -> list[Payload]:
        return []

    def reconcile(self) -> None:
        """Not used by the ticker."""

    def take_stray_check(self) -> bool:
        """Not used by the ticker."""
        return False

    def handle_dead_jobs(self, stored_raws: list[str], reason: str) -> None:
        """Not used by the ticker."""

    def work_entries(self) -> dict[str, WorkRecord]:
        return {}


def queued(app: App, queue: str = "default") -> list[Payload]:
    """The jobs on a queue, oldest push first."""
    raws: list[bytes | str] = client_of(app).lrange(keys_of(app).queue(queue), 0, -1)
    return [decode(raw) for raw in reversed(raws)]


def text(client: redis.Redis, key: str) -> str | None:
    value: bytes | str | None = client.get(key)
    return value.decode() if isinstance(value, bytes) else value


def wait_for(condition: Callable[[], object], timeout: float = 10.0) -> bool:
    """Wait until ``condition()`` is true: a bounded wait for an event, not a timing check."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return bool(condition())
