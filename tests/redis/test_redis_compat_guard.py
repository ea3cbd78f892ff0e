"""The start-up check of the installed redis-py: refuse one cogworker cannot push with,
naming the versions and what to install; warn once about one newer than any tested."""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.exceptions as rex
import redis.utils

import cogworker
from cogworker.core.errors import DependencyError
from cogworker.redis import compat, connection
from cogworker.redis.compat import NEWEST_TESTED_MAJOR, RedisPy, check_redis_py, installed
from cogworker.redis.connection import make_client

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REFUSAL = "Maintenance notifications are only supported with hiredis and RESP3 parsers!"


class RefusingConnection(redis.Connection):
    """Refuses RESP2 the way redis-py 8.1 without hiredis did with a copied RESP3 setup."""

    def __init__(self, **kwargs: Any) -> None:
        if kwargs.get("protocol") == 2:
            raise rex.RedisError(REFUSAL)
        super().__init__(**kwargs)  # type: ignore[no-untyped-call,unused-ignore]


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget which versions were warned about already in this process."""
    monkeypatch.setattr(compat, "_warned", set())


def test_the_installed_redis_py_and_hiredis_are_found() -> None:
    found = installed()

    assert found.version == redis.__version__
    assert (found.hiredis is not None) == (importlib.util.find_spec("hiredis") is not None)
    assert found.hiredis_used == redis.utils.HIREDIS_AVAILABLE


@pytest.mark.parametrize(("found", "text"), [
    (RedisPy("8.1.0", None, False), "redis-py 8.1.0 without hiredis"),
    (RedisPy("8.1.0", "3.5.0", True), "redis-py 8.1.0 with hiredis 3.5.0"),
    (RedisPy("8.1.0", "2.4.0", False),
     "redis-py 8.1.0 with hiredis 2.4.0 (not used by this redis-py)"),
])
def test_descriptions_name_both_versions(found: RedisPy, text: str) -> None:
    assert found.describe() == text


def test_a_release_is_read_from_pre_release_versions_too() -> None:
    assert RedisPy("9.0.0b1", None, False).release == (9, 0, 0)


def test_a_redis_py_that_refuses_the_push_connection_is_a_clear_error() -> None:
    pool = redis.ConnectionPool(connection_class=RefusingConnection, host="127.0.0.1", port=1)

    with pytest.raises(DependencyError) as raised:
        check_redis_py(pool)

    message = str(raised.value)
    assert f"{installed().describe()} cannot be used by cogworker" in message
    assert REFUSAL in message
    assert f"pip install 'redis>=5.0.2,<{NEWEST_TESTED_MAJOR + 1}'" in message


def test_the_app_says_so_at_its_first_connection_not_deep_in_a_push(
    monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    def refusing_client(*args: Any) -> redis.Redis:
        return redis.Redis(connection_pool=redis.ConnectionPool(
            connection_class=RefusingConnection, host="127.0.0.1", port=1))

    monkeypatch.setattr(connection, "_client", refusing_client)
    app = cogworker.App(redis_url=redis_url, namespace="compat-guard")

    @app.job
    def work() -> None: ...

    with pytest.raises(DependencyError, match="cannot be used by cogworker"):
        work.perform_async()


def test_a_redis_py_older_than_the_floor_is_refused(
    monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    monkeypatch.setattr(redis, "__version__", "5.0.1")

    refused = r"redis-py 5\.0\.1 .*needs redis-py 5\.0\.2 or newer"
    with pytest.raises(DependencyError, match=refused):
        make_client(redis_url, max_connections=1)


@pytest.mark.usefixtures("fresh_warnings")
def test_a_newer_redis_py_than_tested_is_used_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, redis_url: str
) -> None:
    future = f"{NEWEST_TESTED_MAJOR + 1}.0.0"
    monkeypatch.setattr(redis, "__version__", future)
    caplog.set_level(logging.WARNING, logger="cogworker.redis.compat")

    clients = [make_client(redis_url, max_connections=1) for _ in range(3)]

    assert all(client.ping() for client in clients)
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1
    assert f"redis-py {future}" in warnings[0]
    assert f"pip install 'redis>=5.0.2,<{NEWEST_TESTED_MAJOR + 1}'" in warnings[0]
    for client in clients:
        client.close()


@pytest.mark.usefixtures("fresh_warnings")
def test_a_tested_redis_py_gets_no_warning(
    caplog: pytest.LogCaptureFixture, redis_url: str
) -> None:
    caplog.set_level(logging.WARNING, logger="cogworker.redis.compat")

    make_client(redis_url, max_connections=1).close()

    assert caplog.records == []


def test_the_floor_checked_is_the_floor_pyproject_admits() -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    dependencies = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]

    assert f"redis>={compat.FLOOR_TEXT}" in dependencies
