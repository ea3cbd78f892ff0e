"""Wake-ups, the fallback to basic, a flushed script cache, and the fetcher hooks."""

from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace

import pluggy
import pytest
import redis

import cogworker
from cogworker.core import hookspecs
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.markers import PROJECT_NAME
from cogworker.core.settings import Settings
from cogworker.fetchers import basic as basic_plugin
from cogworker.fetchers import reliable as reliable_plugin
from cogworker.fetchers.basic import BasicFetcher
from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema
from fetchers.fetch_helpers import IDENTITY, MakeJob, Push
from helpers.redis_servers import RedisServerFactory

FALLBACK_WARNING = "falling back to basic"


def wait_for_subscriber(client: redis.Redis, channel: str) -> None:
    """Wait (bounded) until the fetcher's wake-up thread is subscribed."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if dict(client.pubsub_numsub(channel)).get(channel.encode(), 0) > 0:
            return
        time.sleep(0.01)
    raise AssertionError(f"nobody subscribed to {channel}")


def test_a_job_pushed_while_the_fetch_waits_wakes_it(
    broker: RedisBroker, push: Push, make_job: MakeJob, redis_client: redis.Redis,
    keys: KeySchema,
) -> None:
    fetcher = ReliableFetcher(broker, IDENTITY, idle_max_interval=30.0)
    fetcher.fetch(["a", "b"], 0.05)  # starts the wake-up thread
    wait_for_subscriber(redis_client, keys.wakeup)
    job = make_job("b")
    woken: list[bool] = []
    original_wait = fetcher._wakeups.wait

    def push_then_wait(timeout: float) -> bool:
        if not woken:
            push(job)  # the fetch already looked and found nothing
        woken.append(original_wait(timeout))
        return woken[-1]

    fetcher._wakeups.wait = push_then_wait  # type: ignore[method-assign]
    try:
        works = fetcher.fetch(["a", "b"], 5.0)
    finally:
        fetcher.close()

    assert [w.raw for w in works] == [job]
    assert woken == [True]  # the wake-up ended the wait, not the timeout


def test_a_wake_up_for_another_queue_does_not_end_the_wait(
    broker: RedisBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    fetcher = ReliableFetcher(broker, IDENTITY, idle_max_interval=0.3)
    fetcher.fetch(["a", "b"], 0.05)
    wait_for_subscriber(redis_client, keys.wakeup)
    fetcher._wakeups.clear()
    redis_client.publish(keys.wakeup, "elsewhere")
    try:
        woken = fetcher._wakeups.wait(0.3)
    finally:
        fetcher.close()

    assert woken is False


def test_without_blmove_the_job_still_runs_via_basic_and_the_warning_is_logged_once(
    redis_server_factory: RedisServerFactory, keys: KeySchema, make_job: MakeJob,
    caplog: pytest.LogCaptureFixture,
) -> None:
    queues = ["a"]
    server = redis_server_factory(appendonly=False, extra_args=[
        "--rename-command", "LMOVE", "", "--rename-command", "BLMOVE", ""])
    client = redis.Redis.from_url(server.url)
    broker = RedisBroker(client, keys)
    first, second = make_job("a"), make_job("a")
    broker.queues.store([("a", first), ("a", second)], [])
    fetcher = ReliableFetcher(broker, IDENTITY, idle_max_interval=0.2)

    with caplog.at_level(logging.WARNING):
        # waiting jobs are taken by the fetch script, which needs no LMOVE ...
        fetched = fetcher.fetch(queues, 1.0) + fetcher.fetch(queues, 1.0)
        assert fetcher.mode == "reliable"
        # ... an empty queue is waited on with BLMOVE, which is missing: basic from now on
        assert fetcher.fetch(queues, 0.2) == []
        third = make_job("a")
        broker.queues.store([("a", third)], [])
        fetched += fetcher.fetch(queues, 1.0)
    fetcher.close()
    client.close()

    assert [w.raw for w in fetched] == [first, second, third]
    assert (fetcher.mode, fetcher.reliable) == ("basic", False)
    warnings = [r.getMessage() for r in caplog.records if FALLBACK_WARNING in r.getMessage()]
    assert len(warnings) == 1
    assert "isn't supported by this broker" in warnings[0]


def test_an_old_server_gets_basic_with_a_warning(
    broker: RedisBroker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(broker, "server_version", lambda: (6, 0, 16))
    fetcher = ReliableFetcher(broker, IDENTITY)

    with caplog.at_level(logging.WARNING):
        mode = fetcher.resolve_mode()

    assert mode == "basic"
    assert "6.0.16 < 6.2" in caplog.text


def test_an_unreachable_server_is_asked_again_later(
    broker: RedisBroker, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreachable() -> tuple[int, ...]:
        raise BrokerUnavailableError("connection refused")

    fetcher = ReliableFetcher(broker, IDENTITY)
    monkeypatch.setattr(broker, "server_version", unreachable)
    with pytest.raises(BrokerUnavailableError):
        fetcher.fetch(["default"], 0.1)
    monkeypatch.setattr(broker, "server_version", lambda: (7, 2, 0))

    assert fetcher.resolve_mode() == "reliable"


def test_fetching_works_after_the_script_cache_is_flushed(
    redis_server_factory: RedisServerFactory, keys: KeySchema, make_job: MakeJob,
) -> None:
    server = redis_server_factory(appendonly=False)  # private: SCRIPT FLUSH hits only us
    client = redis.Redis.from_url(server.url)
    broker = RedisBroker(client, keys)
    fetcher = ReliableFetcher(broker, IDENTITY)
    jobs = [make_job("a"), make_job("b")]
    broker.queues.store([("a", jobs[0])], [])
    got = fetcher.fetch(["a", "b"], 1.0)
    client.script_flush()
    broker.queues.store([("b", jobs[1])], [])

    got += fetcher.fetch(["a", "b"], 1.0)
    fetcher.acknowledge(got)
    fetcher.close()

    assert [w.raw for w in got] == jobs
    assert client.llen(keys.inprogress(IDENTITY)) == 0
    client.close()


def plugin_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    manager.register(basic_plugin, "basic")
    return manager


def test_the_reliable_plugin_wins_over_basic_and_reads_the_settings(
    broker: RedisBroker, redis_url: str, namespace: str, make_job: MakeJob,
) -> None:
    app = cogworker.App(redis_url=redis_url, namespace=namespace,
                        fetch_idle_max_interval=0.5, unique_lock_ttl=99.5)
    app.identity = IDENTITY
    manager = plugin_manager()
    manager.register(reliable_plugin, "reliable")

    fetcher = manager.hook.cogworker_make_fetcher(app=app, broker=broker)

    assert isinstance(fetcher, ReliableFetcher)
    assert (fetcher.identity, fetcher.idle_max_interval) == (IDENTITY, 0.5)
    cron = make_job("c", periodic_until_executed=True, periodic_pjid="p1")
    claim = fetcher.relock(cron) if fetcher.relock is not None else None
    assert claim is not None and claim.ttl == 100  # ceil(unique_lock_ttl), for requeues
    fetcher.close()


def test_basic_alone_makes_a_basic_fetcher(broker: RedisBroker) -> None:
    app = SimpleNamespace(settings=Settings(), identity=IDENTITY)
    manager = plugin_manager()

    assert isinstance(manager.hook.cogworker_make_fetcher(app=app, broker=broker), BasicFetcher)


def test_close_ends_a_wait_on_paused_queues_at_once(
    broker: RedisBroker, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    redis_client.sadd(keys.paused_queues, "a")
    fetcher = ReliableFetcher(broker, IDENTITY)
    results: list[object] = []
    thread = threading.Thread(target=lambda: results.append(fetcher.fetch(["a"], 60.0)))
    thread.start()
    fetcher.close()
    thread.join(10)

    assert results == [[]]


def test_the_batch_fetch_script_needs_no_lmove(
    redis_server_factory: RedisServerFactory, keys: KeySchema, make_job: MakeJob,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Several queues are served by one script using LRANGE/LPUSH/LTRIM, not LMOVE."""
    server = redis_server_factory(appendonly=False, extra_args=[
        "--rename-command", "LMOVE", "", "--rename-command", "BLMOVE", ""])
    client = redis.Redis.from_url(server.url)
    broker = RedisBroker(client, keys)
    first, second = make_job("a"), make_job("b")
    broker.queues.store([("a", first), ("b", second)], [])
    fetcher = ReliableFetcher(broker, IDENTITY, idle_max_interval=0.2)

    with caplog.at_level(logging.WARNING):
        fetched = fetcher.fetch(["a", "b"], 1.0, max_jobs=5)
    held = fetcher.in_progress()
    fetcher.close()
    client.close()

    assert sorted(w.raw for w in fetched) == sorted([first, second])
    assert (fetcher.mode, fetcher.reliable) == ("reliable", True)
    assert sorted(held) == sorted([first, second])
    assert FALLBACK_WARNING not in caplog.text
