"""Unique locks through a real worker runtime (in-process Launcher threads, real Redis).

Crash recovery with real processes killed by SIGKILL is in ``test_unique_crash.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis

import cogworker
from cogworker.api import DeadSet, RetrySet, ScheduledSet
from cogworker.plugins.unique_state import state_of
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from cogworker.worker.launcher import Launcher
from helpers.redis_servers import RedisServerFactory
from helpers.workers import wait_until
from unique.unique_helpers import lock_keys, lock_name, owner
from worker.support import make_replica_of_nothing, promote

FAST: dict[str, Any] = {"heartbeat_interval": 0.2, "poll_interval": 0.2, "concurrency": 2,
                        "plugin_options": {"unique": {"orphan_report_interval": 0}}}

MakeApp = Callable[..., cogworker.App]


@pytest.fixture
def make_app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[MakeApp]:
    apps: list[cogworker.App] = []

    def make(url: str | None = None, **settings: Any) -> cogworker.App:
        app = cogworker.App(redis_url=url or redis_url, namespace=namespace,
                            **{**FAST, **settings})
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


@contextmanager
def running(app: cogworker.App) -> Iterator[Launcher]:
    """A worker for ``app`` on a thread of this process, stopped afterwards."""
    launcher = Launcher(app)
    thread = threading.Thread(target=launcher.run, name="test-launcher", daemon=True)
    thread.start()
    try:
        assert launcher.started.wait(20), "the worker did not start"
        yield launcher
    finally:
        launcher.request_stop()
        thread.join(30)


def test_the_lock_is_released_after_success(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app()
    done = threading.Event()

    @app.job(unique="until_executed")
    def sync(account: int) -> None:
        done.set()

    assert sync.perform_async(1) is not None
    assert sync.perform_async(1) is None
    with running(app):
        assert done.wait(20)
        wait_until(lambda: lock_keys(redis_client, keys) == [], 10, "lock not released")
    assert sync.perform_async(1) is not None


def test_the_lock_is_kept_over_retries_and_released_after_the_last_attempt(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app(unique_lock_ttl=100)
    attempts: list[int] = []

    @app.job(unique="until_executed", retry=1, retry_in=lambda count, exc, job: 1000)
    def flaky(account: int) -> None:
        attempts.append(account)
        raise RuntimeError("still broken")

    jid = flaky.perform_async(1)
    assert jid is not None
    [key] = lock_keys(redis_client, keys)
    with running(app):
        wait_until(lambda: RetrySet(app).find(jid) is not None, 20, "never reached retry")
        # extended after the retry write: retry delay + unique_lock_ttl
        wait_until(lambda: redis_client.ttl(key) > 1000, 10, "lock not extended")
        assert redis_client.ttl(key) <= 1100
        assert owner(redis_client, key) == jid
        assert flaky.perform_async(1) is None
        entry = RetrySet(app).find(jid)
        assert entry is not None and entry.retry_now()
        wait_until(lambda: DeadSet(app).find(jid) is not None, 20, "never reached dead")
        wait_until(lambda: lock_keys(redis_client, keys) == [], 10, "lock not released")
    assert attempts == [1, 1]


def test_until_executing_lets_a_new_copy_run_beside_the_running_one(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app()
    both_running = threading.Barrier(2, timeout=20)
    finished: list[str] = []

    @app.job(unique="until_executing")
    def build(ref: str) -> None:
        both_running.wait()  # passes only when the two copies run at the same time
        finished.append(ref)

    assert build.perform_async("main") is not None
    assert build.perform_async("main") is None
    with running(app):
        wait_until(lambda: lock_keys(redis_client, keys) == [], 20, "lock kept after start")
        assert build.perform_async("main") is not None
        wait_until(lambda: len(finished) == 2, 30, "the two copies did not run together")
    assert RetrySet(app).size() == 0


def test_while_executing_never_runs_two_copies_at_once(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app()
    gate = threading.Event()
    guard = threading.Lock()
    running_now: list[int] = []
    overlap: list[int] = []
    finished: list[int] = []

    @app.job(unique="while_executing", unique_args=lambda args: args[1:])
    def report(copy: int, day: str) -> None:
        with guard:
            running_now.append(copy)
            overlap.append(len(running_now))
        gate.wait(30)
        with guard:
            running_now.remove(copy)
            finished.append(copy)

    report.perform_async(1, "mon")
    report.perform_async(2, "mon")  # the same report: only the day counts
    with running(app):
        wait_until(lambda: ScheduledSet(app).size() == 1, 20, "the second copy never waited")
        gate.set()
        wait_until(lambda: len(finished) == 2, 30, "the postponed copy never ran")
    assert max(overlap) == 1
    wait_until(lambda: lock_keys(redis_client, keys) == [], 10, "run lock not released")


@pytest.fixture
def flaky_server(redis_server_factory: RedisServerFactory) -> RedisServer:
    return redis_server_factory(appendonly=False)


def test_a_release_that_failed_in_an_outage_happens_after_redis_returns(
    make_app: MakeApp, flaky_server: RedisServer, keys: KeySchema
) -> None:
    app = make_app(url=flaky_server.url)
    client = redis.Redis.from_url(flaky_server.url)
    started, finish = threading.Event(), threading.Event()

    @app.job(unique="until_executed")
    def sync(account: int) -> None:
        started.set()
        finish.wait(30)

    jid = sync.perform_async(1)
    [key] = lock_keys(client, keys)
    with running(app):
        assert started.wait(20)
        make_replica_of_nothing(flaky_server, serve_reads=True)  # writes fail: READONLY
        finish.set()
        wait_until(lambda: state_of(app).deferred.owed() == [(lock_name(keys, key), jid)], 20,
                   "the failed release was not remembered")
        assert owner(client, key) == jid
        promote(flaky_server)
        wait_until(lambda: lock_keys(client, keys) == [], 20, "lock not released after outage")
        assert state_of(app).deferred.owed() == []
    client.close()
