"""Fixtures for the whole suite: private redis-servers and per-test key namespaces.

Every server here is started by these fixtures through ``cogworker.redis.server`` (the same
code the product uses) and stopped by them; tests never touch a Redis they did not start and
never FLUSH: each test works in its own namespace and only that namespace's keys are deleted.

Without a redis-server binary the Redis tests are skipped, except when ``CI=true``: there
they fail, because in CI nothing the suite needs may be missing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from hypothesis import settings as hypothesis_settings

from cogworker.core.errors import EmbeddedRedisError
from cogworker.core.plugin_cache import CACHE_DIR_ENV
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer, find_redis_server
from cogworker.redis.server_state import stop_project_server
from helpers.redis_servers import RedisServerFactory, delete_namespace

# Property tests check what is computed, never how fast: hypothesis's default 200 ms
# deadline per example is a timing assertion that a loaded CI machine fails.
hypothesis_settings.register_profile("cogworker", deadline=None)
hypothesis_settings.load_profile("cogworker")


def pytest_configure(config: pytest.Config) -> None:
    """The suite's processes keep their plugin-scan cache in a folder of the run's own
    (inherited by every worker process it starts), never in the user's
    ``~/.cache/cogworker``, unless the caller chose one."""
    if CACHE_DIR_ENV not in os.environ:
        folder = tempfile.mkdtemp(prefix="cogworker-test-cache-")
        os.environ[CACHE_DIR_ENV] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


# The shared test server keeps nothing on disk: no AOF, no RDB snapshots.
_NO_PERSISTENCE = ("--save", "")


@pytest.fixture(scope="session")
def redis_server_binary() -> str:
    """The redis-server every fixture runs; skips (fails with CI=true) when there is none."""
    try:
        return find_redis_server()
    except EmbeddedRedisError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but no redis-server is available: {exc}", pytrace=False)
        pytest.skip(f"no redis-server available: {exc}")


@pytest.fixture(scope="session")
def redis_server(
    redis_server_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RedisServer]:
    """One private redis-server for the whole session (no persistence, for speed)."""
    server = RedisServer(
        tmp_path_factory.mktemp("redis"),
        appendonly=False,
        extra_args=_NO_PERSISTENCE,
        executable=redis_server_binary,
    )
    with server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture
def namespace() -> str:
    """A key namespace no other test uses."""
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def keys(namespace: str) -> KeySchema:
    return KeySchema(namespace)


@pytest.fixture
def redis_client(redis_url: str, namespace: str) -> Iterator[redis.Redis]:
    """A client of the session server; the test's namespace is deleted afterwards."""
    client = redis.Redis.from_url(redis_url, decode_responses=False)
    try:
        yield client
    finally:
        delete_namespace(client, namespace)
        client.close()


@pytest.fixture
def acl_user(redis_url: str, redis_client: redis.Redis) -> Iterator[Callable[..., str]]:
    """``acl_user(*rules)``: a Redis user on the session server with these ACL rules (after
    ``reset on``, a password added); returns its URL. The users are deleted afterwards."""
    names: list[str] = []

    def make(*rules: str) -> str:
        name = f"u-{uuid.uuid4().hex[:8]}"
        redis_client.acl_setuser(name, reset=True, enabled=True, passwords=["+pw"])
        cast(Any, redis_client).execute_command("ACL", "SETUSER", name, *rules)
        names.append(name)
        return redis_url.replace("redis://", f"redis://{name}:pw@", 1)

    yield make
    if names:
        redis_client.acl_deluser(*names)


@pytest.fixture
def redis_server_factory(
    redis_server_binary: str, tmp_path: Path
) -> Iterator[RedisServerFactory]:
    """Start extra private servers: ``redis_server_factory(**RedisServer kwargs)``.

    Defaults: a fresh data folder under ``tmp_path`` (a short one in /tmp for unix sockets,
    whose paths are length-limited) and AOF on, as in the product. All are stopped after
    the test.
    """
    started: list[RedisServer] = []
    short_dirs: list[str] = []

    def start(**kwargs: Any) -> RedisServer:
        if "data_dir" not in kwargs:
            if kwargs.get("unix_socket"):
                short_dirs.append(tempfile.mkdtemp(prefix="cw-redis-"))
                kwargs["data_dir"] = short_dirs[-1]
            else:
                kwargs["data_dir"] = tmp_path / f"redis-{len(started)}"
        kwargs.setdefault("executable", redis_server_binary)
        server = RedisServer(**kwargs)
        started.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in started:
            server.stop()
        for directory in short_dirs:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def redis_project_dir(redis_server_binary: str, tmp_path: Path) -> Iterator[Path]:
    """A project folder whose shared redis-server (if a test starts one) is stopped after."""
    project = tmp_path / "project"
    project.mkdir()
    try:
        yield project
    finally:
        stop_project_server(project)
