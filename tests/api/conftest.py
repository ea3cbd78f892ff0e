"""Fixtures for the introspection API tests: a broker on the test namespace, job payloads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis

from cogworker.core.payload import dumps, new_jid
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema

MakeJob = Callable[..., str]


@pytest.fixture
def broker(redis_client: redis.Redis, keys: KeySchema) -> RedisBroker:
    """A broker on the session server, in this test's namespace (bytes replies)."""
    return RedisBroker(redis_client, keys)


@pytest.fixture
def make_job() -> MakeJob:
    """``make_job(queue="default", **fields)``: a raw job payload with a fresh jid."""

    def make(queue: str = "default", **fields: Any) -> str:
        job: dict[str, Any] = {"class": "Work", "args": [1, "two"], "queue": queue,
                               "jid": new_jid(), "retry": True, "created_at": 1_700_000_000.0}
        job.update(fields)
        return dumps(job)

    return make
