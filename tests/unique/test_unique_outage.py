"""Releases that fail because Redis is away are owed, retried on heartbeats, never dropped."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import redis

import cogworker
from cogworker.plugins.unique_state import state_of
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from helpers.redis_servers import RedisServerFactory
from unique.unique_helpers import FakeWorker, lock_keys, lock_name, owner, queued

NO_REPORT = {"unique": {"orphan_report_interval": 0}}


@pytest.fixture
def own_server(redis_server_factory: RedisServerFactory) -> RedisServer:
    """A server this test may stop and start (AOF on, so keys survive the restart)."""
    return redis_server_factory()


@pytest.fixture
def outage_app(own_server: RedisServer, namespace: str) -> Iterator[cogworker.App]:
    app = cogworker.App(redis_url=own_server.url, namespace=namespace, plugin_options=NO_REPORT)

    @app.job(unique="until_executed", name="Sync")
    def sync(account: int) -> None: ...

    yield app
    app.close()


@pytest.fixture
def client(own_server: RedisServer) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(own_server.url)
    yield connection
    connection.close()


def test_a_release_during_an_outage_happens_on_a_heartbeat_after_redis_returns(
    outage_app: cogworker.App, own_server: RedisServer, client: redis.Redis, keys: KeySchema,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "cogworker.unique")
    app = outage_app
    jid = app.push({"class": "Sync", "args": [1], "unique": "until_executed"})
    [job] = queued(client, keys)
    [key] = lock_keys(client, keys)
    own_server.stop()
    app.hooks.release_unique_lock(app, job, "success")
    name = lock_name(keys, key)
    assert state_of(app).deferred.owed() == [(name, jid)]
    assert f"could not release unique lock {name} of jid={jid} (success)" in caplog.text
    app.hooks.heartbeat(FakeWorker(app))  # still away: kept for the next beat
    assert state_of(app).deferred.owed() == [(name, jid)]
    own_server.start()
    assert owner(client, key) == jid
    app.hooks.heartbeat(FakeWorker(app))
    assert lock_keys(client, keys) == []
    assert state_of(app).deferred.owed() == []
    assert "now that Redis is back" in caplog.text


def test_releases_still_owed_at_shutdown_are_tried_once_more_then_named(
    outage_app: cogworker.App, own_server: RedisServer, client: redis.Redis, keys: KeySchema,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = outage_app
    app.push({"class": "Sync", "args": [1], "unique": "until_executed"})
    [job] = queued(client, keys)
    [key] = lock_keys(client, keys)
    own_server.stop()
    app.hooks.release_unique_lock(app, job, "dead")
    app.hooks.shutdown(FakeWorker(app))
    assert "exiting with 1 unique lock release(s) still owed" in caplog.text
    assert lock_name(keys, key) in caplog.records[-1].getMessage()
    own_server.start()
    app.hooks.shutdown(FakeWorker(app))  # the last try at shutdown releases it
    assert lock_keys(client, keys) == []


def test_an_owed_release_never_deletes_a_lock_that_changed_hands(
    outage_app: cogworker.App, own_server: RedisServer, client: redis.Redis, keys: KeySchema
) -> None:
    app = outage_app
    app.push({"class": "Sync", "args": [1], "unique": "until_executed"})
    [job] = queued(client, keys)
    [key] = lock_keys(client, keys)
    own_server.stop()
    app.hooks.release_unique_lock(app, job, "success")
    own_server.start()
    client.set(key, "newer-jid")
    app.hooks.heartbeat(FakeWorker(app))
    assert owner(client, key) == "newer-jid"
    assert state_of(app).deferred.owed() == []


def test_an_owed_release_failing_for_another_reason_is_dropped_with_a_log_line(
    outage_app: cogworker.App, own_server: RedisServer, client: redis.Redis, keys: KeySchema,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = outage_app
    app.push({"class": "Sync", "args": [1], "unique": "until_executed"})
    [job] = queued(client, keys)
    [key] = lock_keys(client, keys)
    own_server.stop()
    app.hooks.release_unique_lock(app, job, "success")
    own_server.start()
    client.delete(key)
    client.hset(key, "not", "a string")  # GET in the release script fails: WRONGTYPE
    app.hooks.heartbeat(FakeWorker(app))
    assert state_of(app).deferred.owed() == []
    assert f"gave up the deferred release of unique lock {lock_name(keys, key)}" in caplog.text
