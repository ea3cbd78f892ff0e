"""The lock after the push: extended, released, owner-checked, per mode (hooks called directly).

The engine calls these hooks (see ``tests/unique/test_unique_worker.py`` for real workers);
here each rule is checked on its own against real Redis.
"""

from __future__ import annotations

import pytest
import redis

import cogworker
from cogworker.core.payload import Payload
from cogworker.plugins.unique import run_lock_ttl
from cogworker.redis.keys import KeySchema
from unique.unique_helpers import FakeWorker, lock_keys, owner, queued

TERMINAL = ["success", "dead", "killed", "discarded", "orphaned"]


def pushed(app: cogworker.App, client: redis.Redis, keys: KeySchema, mode: str,
           *args: object, **options: object) -> list[Payload]:
    """Register a job with ``unique=mode``, push ``args`` twice, return what was stored."""
    @app.job(unique=mode, name=f"Job_{mode}", **options)
    def job(*_: object) -> None: ...

    job.perform_async(*args)
    job.perform_async(*args)
    return queued(client, keys)


@pytest.mark.parametrize("reason", TERMINAL)
def test_until_executed_is_released_when_the_job_is_done(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema, reason: str
) -> None:
    [job] = pushed(app, redis_client, keys, "until_executed", 1)
    app.hooks.release_unique_lock(app, job, "started")
    assert len(lock_keys(redis_client, keys)) == 1
    app.hooks.release_unique_lock(app, job, reason)
    assert lock_keys(redis_client, keys) == []


def test_until_executed_is_extended_over_a_retry_wait(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    [job] = pushed(app, redis_client, keys, "until_executed", 1)
    [key] = lock_keys(redis_client, keys)
    app.hooks.extend_unique_lock(app, job, 13_600.4)  # the wait; the plugin adds lock_ttl
    assert 99_990 < redis_client.ttl(key) <= 100_001  # 13,600.4 + 86,400 (the default)
    assert owner(redis_client, key) == job["jid"]


def test_a_stale_owner_can_neither_release_nor_extend_a_newer_owners_lock(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    [old] = pushed(app, redis_client, keys, "until_executed", 1)
    [key] = lock_keys(redis_client, keys)
    redis_client.set(key, "newer-jid", ex=500)
    app.hooks.extend_unique_lock(app, old, 100_000)
    assert redis_client.ttl(key) <= 500
    for reason in [*TERMINAL, "push-failed"]:
        app.hooks.release_unique_lock(app, old, reason)
    assert owner(redis_client, key) == "newer-jid"


def test_until_executing_is_released_as_the_job_starts(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="until_executing")
    def build(ref: str) -> None: ...

    assert build.perform_async("main") is not None
    assert build.perform_async("main") is None
    [job] = queued(redis_client, keys)
    assert app.hooks.unique_job_starting(app, job) is None
    assert lock_keys(redis_client, keys) == []
    assert build.perform_async("main") is not None  # a new copy may wait while one runs
    app.hooks.release_unique_lock(app, job, "success")  # not the owner any more: no effect
    assert len(lock_keys(redis_client, keys)) == 1


def test_while_executing_lets_one_copy_run_at_a_time(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    first, second = pushed(app, redis_client, keys, "while_executing", 1)
    assert app.hooks.unique_job_starting(app, first) is True
    assert app.hooks.unique_job_starting(app, second) is False
    assert app.hooks.unique_job_starting(app, first) is True  # back after a crash: still its own
    [run_key] = lock_keys(redis_client, keys)
    assert run_key.endswith(":run")
    assert owner(redis_client, run_key) == first["jid"]
    assert redis_client.ttl(run_key) <= run_lock_ttl(app)
    app.hooks.release_unique_lock(app, second, "success")  # not the owner: no effect
    assert owner(redis_client, run_key) == first["jid"]
    app.hooks.release_unique_lock(app, first, "success")
    assert app.hooks.unique_job_starting(app, second) is True


def test_while_executing_gives_up_its_run_lock_while_waiting_for_a_retry(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    first, second = pushed(app, redis_client, keys, "while_executing", 1)
    assert app.hooks.unique_job_starting(app, first) is True
    app.hooks.extend_unique_lock(app, first, 1000)
    assert lock_keys(redis_client, keys) == []
    assert app.hooks.unique_job_starting(app, second) is True


@pytest.mark.parametrize("reason", [*TERMINAL, "started"])
def test_a_window_lock_only_expires(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema, reason: str
) -> None:
    @app.job(unique_for=60)
    def digest(day: str) -> None: ...

    digest.perform_async("mon")
    [job] = queued(redis_client, keys)
    [key] = lock_keys(redis_client, keys)
    assert app.hooks.unique_job_starting(app, job) is None
    app.hooks.extend_unique_lock(app, job, 100_000)
    app.hooks.release_unique_lock(app, job, reason)
    assert owner(redis_client, key) == job["jid"]
    assert redis_client.ttl(key) <= 60


def test_a_capped_lock_is_not_extended_but_is_released(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    [job] = pushed(app, redis_client, keys, "until_executed", 1, unique_for=300)
    [key] = lock_keys(redis_client, keys)
    app.hooks.extend_unique_lock(app, job, 100_000)
    assert redis_client.ttl(key) <= 300
    app.hooks.release_unique_lock(app, job, "success")
    assert lock_keys(redis_client, keys) == []


def test_heartbeats_renew_run_locks_and_shutdown_gives_them_up(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    first, second = pushed(app, redis_client, keys, "while_executing", 1)
    assert app.hooks.unique_job_starting(app, first) is True
    [run_key] = lock_keys(redis_client, keys)
    redis_client.expire(run_key, 5)
    worker = FakeWorker(app, performing=[first])
    app.hooks.heartbeat(worker)
    assert redis_client.ttl(run_key) > 5
    redis_client.delete(run_key)  # lost (expired during an outage): retaken
    app.hooks.heartbeat(worker)
    assert owner(redis_client, run_key) == first["jid"]
    app.hooks.shutdown(worker)
    assert lock_keys(redis_client, keys) == []
    assert app.hooks.unique_job_starting(app, second) is True


def test_a_worker_side_hook_never_raises_for_a_bad_payload(
    app: cogworker.App, caplog: pytest.LogCaptureFixture
) -> None:
    job: Payload = {"class": "Raw", "jid": "j1", "queue": "default", "args": [],
                    "unique": "sometimes"}
    app.hooks.release_unique_lock(app, job, "success")
    app.hooks.extend_unique_lock(app, job, 10)
    assert "cannot release the unique lock of jid=j1" in caplog.text
    assert "cannot extend the unique lock of jid=j1" in caplog.text
