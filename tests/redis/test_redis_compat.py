"""The installed redis-py, whatever its version and with or without hiredis: pushes, bulk
pushes, both fetchers, wake-ups and remote signals over RESP2 and RESP3 URLs, the push
line's explicit RESP2 connection, and the start-up check of redis-py (issue 13).

These run in every leg of ``scripts/check``, so each redis-py version the matrix installs
goes through them (``docs/explanation/dependencies.md``, "Supported versions").
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, cast

import pytest
import redis

from cogworker.core.payload import dumps, new_jid
from cogworker.fetchers.basic import BasicFetcher
from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.redis.broker import RedisBroker
from cogworker.redis.compat import resp2_connection
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema

IDENTITY = "compat-host:1:0123456789ab"


def job(queue: str = "default") -> str:
    return dumps({"class": "Work", "args": [1], "queue": queue, "jid": new_jid()})


@pytest.fixture(params=["", "?protocol=2", "?protocol=3"], ids=["default", "resp2", "resp3"])
def url(request: pytest.FixtureRequest, redis_url: str) -> str:
    """The session server's URL as a user writes it: plain, or naming a protocol."""
    return redis_url + str(request.param)


@pytest.fixture
def broker(url: str, keys: KeySchema, redis_client: redis.Redis) -> Iterator[RedisBroker]:
    broker = RedisBroker(make_client(url, max_connections=4), keys)
    yield broker
    broker.close()


@pytest.fixture
def no_warnings(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fails the test if cogworker logged a warning (a wake-up not sent, say)."""
    caplog.set_level(logging.WARNING, logger="cogworker")
    yield
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []


def listen(client: redis.Redis, channel: str) -> Any:
    listener = client.pubsub()  # type: ignore[no-untyped-call, unused-ignore]
    listener.subscribe(channel)
    confirmation = listener.get_message(timeout=5.0)
    assert confirmation is not None and confirmation["type"] in ("subscribe", b"subscribe")
    return listener


def queued(client: redis.Redis, keys: KeySchema, queue: str = "default") -> list[str]:
    raws = client.lrange(keys.queue(queue), 0, -1)
    return [raw.decode() if isinstance(raw, bytes) else raw for raw in reversed(raws)]


@pytest.mark.usefixtures("no_warnings")
def test_every_push_stores_its_job_and_wakes_a_listener(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    listener = listen(redis_client, keys.wakeup)
    raws = [job() for _ in range(3)]
    for raw in raws:  # the first runs push.lua; the next two take a push line
        broker.queues.store([("default", raw)], [])

    assert queued(redis_client, keys) == raws
    woken = [listener.get_message(timeout=5.0) for _ in raws]
    assert [message and message["data"] for message in woken] == [b"default"] * 3
    listener.close()


@pytest.mark.usefixtures("no_warnings")
def test_a_bulk_push_stores_every_job_and_wakes_each_queue(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    listener = listen(redis_client, keys.wakeup)
    mail, default = [job("mail") for _ in range(3)], [job() for _ in range(2)]

    broker.queues.store([("mail", raw) for raw in mail] + [("default", raw) for raw in default], [])

    assert queued(redis_client, keys, "mail") == mail
    assert queued(redis_client, keys) == default
    woken = {listener.get_message(timeout=5.0)["data"] for _ in range(2)}
    assert woken == {b"mail", b"default"}
    listener.close()


@pytest.mark.parametrize("fetcher_class", [BasicFetcher, ReliableFetcher])
@pytest.mark.usefixtures("no_warnings")
def test_both_fetchers_take_pushed_jobs_in_order(
    broker: RedisBroker, fetcher_class: type[BasicFetcher | ReliableFetcher]
) -> None:
    fetcher = fetcher_class(broker, IDENTITY)
    raws = [job() for _ in range(3)]
    try:
        for raw in raws:
            broker.queues.store([("default", raw)], [])
        fetched = [fetcher.fetch(["default"], 2.0) for _ in raws]
        assert [work.raw for works in fetched for work in works] == raws
        fetcher.acknowledge([work for works in fetched for work in works])
        assert fetcher.in_progress() == []
    finally:
        fetcher.close()


@pytest.mark.usefixtures("no_warnings")
def test_a_fetch_waiting_on_several_queues_is_woken_by_a_push(broker: RedisBroker) -> None:
    fetcher = ReliableFetcher(broker, IDENTITY, idle_max_interval=30.0)
    try:
        assert fetcher.fetch(["mail", "default"], 0.2) == []  # subscribes to wake-ups
        raw = job("mail")
        broker.queues.store([("mail", raw)], [])
        # Woken by the wake-up: far sooner than idle_max_interval, within the fetch timeout.
        works = fetcher.fetch(["mail", "default"], 10.0)
        assert [work.raw for work in works] == [raw]
        fetcher.acknowledge(works)
    finally:
        fetcher.close()


def test_remote_signals_arrive_over_the_subscription(broker: RedisBroker) -> None:
    with broker.processes.subscribe_signals(IDENTITY) as subscription:
        assert broker.processes.signal(IDENTITY, "quiet") == 1
        assert subscription.get(5.0) == "quiet"


def test_the_push_connection_asks_for_resp2_and_no_notifications(url: str) -> None:
    client = make_client(url, max_connections=1)
    connection = resp2_connection(client.connection_pool)

    assert str(connection.protocol) == "2"
    config = getattr(connection, "maint_notifications_config", None)
    assert config is None or config.enabled is False  # redis-py >= 7.0 has the setting
    client.close()


class _RecordingConnection(redis.Connection):
    """Keeps the settings it was made with (redis-py's own ignores unknown ones silently
    only in some versions)."""

    def __init__(self, **kwargs: Any) -> None:
        self.settings = dict(kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k not in ("cache", "cache_config")}
        cast(Any, super()).__init__(**kwargs)  # typed in some redis-py versions only


def test_settings_of_the_pool_s_resp3_features_are_left_out() -> None:
    pool = redis.ConnectionPool(connection_class=_RecordingConnection, host="127.0.0.1",
                                port=1, db=3, username="u", password="p")
    pool.connection_kwargs.update(cache=object(), cache_config=object(),
                                  maint_notifications_pool_handler=object(),
                                  orig_host_address="10.0.0.9")

    settings = resp2_connection(pool).settings

    assert settings["protocol"] == 2
    assert (settings["host"], settings["port"], settings["db"]) == ("127.0.0.1", 1, 3)
    assert (settings["username"], settings["password"]) == ("u", "p")
    assert {"cache", "cache_config", "maint_notifications_pool_handler",
            "orig_host_address"}.isdisjoint(settings)
