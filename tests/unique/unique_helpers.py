"""Shared helpers of the unique plugin tests: a fake worker handle, Redis readers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import redis

import cogworker
from cogworker.core.payload import Payload
from cogworker.core.settings import Settings
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text


@dataclass
class FakeWorker:
    """The :class:`~cogworker.core.hookspecs.WorkerHandle` lifecycle hooks receive."""

    app: cogworker.App
    identity: str = "host:1:feedbeef0000"
    performing: list[Payload] = field(default_factory=list)

    @property
    def settings(self) -> Settings:
        return self.app.settings

    def performing_jobs(self) -> list[Payload]:
        return list(self.performing)


def queued(client: redis.Redis, keys: KeySchema, queue: str = "default") -> list[dict[str, Any]]:
    """The payloads on a queue, oldest first."""
    return [json.loads(raw) for raw in reversed(client.lrange(keys.queue(queue), 0, -1))]


def scheduled(client: redis.Redis, keys: KeySchema) -> list[dict[str, Any]]:
    raws: list[bytes] = client.zrange(keys.schedule, 0, -1)  # type: ignore[assignment]
    return [json.loads(raw) for raw in raws]


def lock_keys(client: redis.Redis, keys: KeySchema) -> list[str]:
    """Every unique lock key of the namespace, sorted."""
    pattern = keys.unique_prefix + "*"
    return sorted(as_text(key) for key in client.scan_iter(match=pattern, count=1000))


def lock_name(keys: KeySchema, key: str) -> str:
    """The lock name (``unique:<digest>``) of a unique lock key."""
    return "unique:" + key.removeprefix(keys.unique_prefix)


def owner(client: redis.Redis, key: str) -> str | None:
    value: bytes | str | None = client.get(key)
    return None if value is None else as_text(value)
