"""Unique locks taken at push: duplicates are skipped, nothing else is."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import redis

import cogworker
from cogworker.core.errors import ConfigurationError, JobDefinitionError
from cogworker.core.middleware import PushContext
from cogworker.redis.keys import KeySchema
from unique.unique_helpers import lock_keys, owner, queued, scheduled


def original_key(keys: KeySchema, text: str) -> str:
    """The original's key: SHA-1 of ``"class|queue|args JSON"``."""
    return keys.unique(hashlib.sha1(text.encode("utf-8")).hexdigest())


def test_a_duplicate_push_stores_nothing_and_returns_none(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="until_executed", name="Sync")
    def sync(account: int, mode: str) -> None: ...

    first = sync.perform_async(7, "full")
    assert first is not None
    assert [sync.perform_async(7, "full") for _ in range(3)] == [None, None, None]
    assert [job["jid"] for job in queued(redis_client, keys)] == [first]
    key = original_key(keys, 'Sync|default|[7,"full"]')
    assert lock_keys(redis_client, keys) == [key]
    assert owner(redis_client, key) == first
    assert 86_390 < redis_client.ttl(key) <= 86_400


def test_other_args_or_queues_are_not_duplicates_and_plain_jobs_never_are(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="until_executed")
    def sync(account: int) -> None: ...

    @app.job
    def plain(account: int) -> None: ...

    jids = [sync.perform_async(1), sync.perform_async(2), sync.set(queue="low").perform_async(1),
            plain.perform_async(1), plain.perform_async(1)]
    assert None not in jids
    assert len(queued(redis_client, keys)) == 4
    assert len(queued(redis_client, keys, "low")) == 1
    assert len(lock_keys(redis_client, keys)) == 3


def test_unique_args_chooses_the_arguments_that_count(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="until_executed", name="Mail", unique_args=lambda args: args[:1])
    def mail(user: int, note: str) -> None: ...

    assert mail.perform_async(1, "hello") is not None
    assert mail.perform_async(1, "other note") is None
    assert mail.perform_async(2, "hello") is not None
    assert original_key(keys, "Mail|default|[1]") in lock_keys(redis_client, keys)


def test_a_failing_unique_args_fails_the_push_naming_the_job(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="until_executed", name="Broken", unique_args=lambda args: args[5])
    def broken(user: int) -> None: ...

    with pytest.raises(JobDefinitionError, match="unique_args of job 'Broken' raised"):
        broken.perform_async(1)
    assert queued(redis_client, keys) == []


def test_scheduled_and_bulk_pushes_are_deduplicated_too(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="until_executed")
    def sync(account: int) -> None: ...

    later = sync.perform_in(3600, 1)
    assert later is not None
    assert sync.perform_async(1) is None
    results = app.push_bulk(sync, [[1], [2], [2], [3]])
    assert results[0] is None and results[2] is None
    assert results[1] is not None and results[3] is not None
    assert [job["jid"] for job in scheduled(redis_client, keys)] == [later]
    assert [job["args"] for job in queued(redis_client, keys)] == [[2], [3]]


def test_a_push_that_fails_after_the_lock_releases_it(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="until_executed")
    def sync(account: int) -> None: ...

    def refuse(ctx: PushContext, call_next: Any) -> str | None:
        raise RuntimeError("middleware says no")

    app.client_middleware.append(refuse)
    with pytest.raises(RuntimeError, match="middleware says no"):
        sync.perform_async(1)
    assert lock_keys(redis_client, keys) == []
    app.client_middleware.remove(refuse)
    assert sync.perform_async(1) is not None


def test_unique_for_alone_is_a_window_lock_with_its_own_ttl(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique_for=120, name="Digest")
    def digest(day: str) -> None: ...

    jid = digest.perform_async("mon")
    assert jid is not None
    assert digest.perform_async("mon") is None
    key = original_key(keys, 'Digest|default|["mon"]') + ":for"
    assert lock_keys(redis_client, keys) == [key]
    assert owner(redis_client, key) == jid
    assert 110 < redis_client.ttl(key) <= 120


def test_unique_for_caps_the_ttl_of_an_until_executed_lock(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="until_executed", unique_for=300, name="Capped")
    def capped(day: str) -> None: ...

    assert capped.perform_async("mon") is not None
    key = original_key(keys, 'Capped|default|["mon"]')
    assert lock_keys(redis_client, keys) == [key]
    assert 290 < redis_client.ttl(key) <= 300


def test_while_executing_takes_no_lock_at_push(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(unique="while_executing")
    def report(day: str) -> None: ...

    assert report.perform_async("mon") is not None
    assert report.perform_async("mon") is not None
    assert len(queued(redis_client, keys)) == 2
    assert lock_keys(redis_client, keys) == []


@pytest.mark.parametrize(("options", "message"), [
    ({"unique": "sometimes"}, "unique must be one of"),
    ({"unique": "while_executing", "unique_for": 60}, "while_executing takes none"),
    ({"unique_for": -1}, "unique_for must be a number of seconds > 0"),
])
def test_a_bad_unique_option_in_a_raw_push_fails_it(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema, options: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(JobDefinitionError, match=message):
        app.push({"class": "Raw", "args": [1], **options})
    assert queued(redis_client, keys) == []
    assert lock_keys(redis_client, keys) == []


def test_a_lock_ttl_setting_is_used_and_rounded_up(
    redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = cogworker.App(redis_url=redis_url, namespace=namespace, unique_lock_ttl=90.2)
    try:
        @app.job(unique="until_executed")
        def sync(account: int) -> None: ...

        sync.perform_async(1)
        [key] = lock_keys(redis_client, keys)
        assert 85 < redis_client.ttl(key) <= 91
    finally:
        app.close()


def test_the_plugin_option_lock_ttl_wins_over_its_alias(
    redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = cogworker.App(redis_url=redis_url, namespace=namespace, unique_lock_ttl=900,
                        plugin_options={"unique": {"lock_ttl": 40}})
    try:
        @app.job(unique="until_executed")
        def sync(account: int) -> None: ...

        sync.perform_async(1)
        [key] = lock_keys(redis_client, keys)
        assert 30 < redis_client.ttl(key) <= 40
    finally:
        app.close()


@pytest.mark.parametrize(("options", "field"), [
    ({"lock_ttl": -1}, "plugin_options.unique.lock_ttl"),
    ({"lock_tll": 40}, "plugin_options.unique.lock_tll"),
])
def test_a_bad_unique_option_stops_the_start(redis_url: str, options: dict[str, object],
                                             field: str) -> None:
    app = cogworker.App(redis_url=redis_url, plugin_options={"unique": options})
    with pytest.raises(ConfigurationError) as caught:
        _ = app.hooks
    assert caught.value.field == field
    app.close()
