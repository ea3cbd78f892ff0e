"""pytest plugin for projects that use cogworker (registered through ``pytest11``).

Fixtures:

* ``cogworker_redis_url`` — a private redis-server for the test session (the same embedded
  server cogworker's own suite uses), started on first use and stopped at the end;
* ``cogworker_namespace`` — a key namespace unique to the test; its keys are deleted after.

Nothing here runs unless a test asks for one of these fixtures.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from cogworker.redis.server import RedisServer


@pytest.fixture(scope="session")
def cogworker_redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a private redis-server for this test session (no persistence)."""
    server = RedisServer(tmp_path_factory.mktemp("cogworker-redis"), appendonly=False,
                         extra_args=("--save", ""))
    with server:
        yield server.url


@pytest.fixture
def cogworker_namespace(cogworker_redis_url: str) -> Iterator[str]:
    """A key namespace only this test uses; its keys are deleted afterwards."""
    namespace = f"test-{uuid.uuid4().hex[:10]}"
    yield namespace
    client = redis.Redis.from_url(cogworker_redis_url)
    try:
        for pattern in (f"{namespace}:*", f"{{{namespace}}}:*"):
            batch = list(client.scan_iter(match=pattern, count=500))
            if batch:
                client.delete(*batch)
    finally:
        client.close()
