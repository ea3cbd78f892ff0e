"""The Redis side of cogworker's pytest plugin: a session's private server, and the clean-up
of one test's key namespace. The plugin calls these; nothing else in it knows Redis."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from cogworker.redis.server import RedisServer

DELETE_BATCH = 500


@contextmanager
def session_server(directory: Path) -> Iterator[str]:
    """Run a private redis-server in ``directory`` (no persistence) and yield its URL;
    stopped when the block ends.

    The server wants a password, fresh for each session and carried in the URL, so other
    local users cannot reach the test data through its loopback port.
    """
    server = RedisServer(directory, appendonly=False, extra_args=("--save", ""),
                         password=secrets.token_urlsafe(24))
    with server:
        yield server.url


def delete_namespace(url: str, namespace: str) -> None:
    """Delete every key of ``namespace`` (plain and cluster hash-tagged) at ``url``."""
    client = redis.Redis.from_url(url)
    try:
        for pattern in (f"{namespace}:*", f"{{{namespace}}}:*"):
            batch = list(client.scan_iter(match=pattern, count=DELETE_BATCH))
            if batch:
                client.delete(*batch)
    finally:
        client.close()
