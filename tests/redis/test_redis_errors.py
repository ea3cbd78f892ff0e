"""Redis failures reach callers as cogworker errors with the redis-py error as the cause."""

from __future__ import annotations

import time

import pytest
import redis
import redis.exceptions as rex

from cogworker.core.errors import BrokerError, BrokerFullError, BrokerUnavailableError
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.errors import translate
from cogworker.redis.keys import KeySchema
from cogworker.redis.server_process import free_port
from helpers.redis_servers import RedisServerFactory, demotable_broker

JOB = '{"class":"Work","args":[],"queue":"default","jid":"0123456789abcdef01234567"}'


def test_an_unreachable_server_is_unavailable(keys: KeySchema) -> None:
    broker = RedisBroker(make_client(f"redis://127.0.0.1:{free_port()}/0",
                                     max_connections=1), keys)
    assert broker.ping() is False
    with pytest.raises(BrokerUnavailableError) as caught:
        broker.queues.store([("default", JOB)], [])
    assert isinstance(caught.value.__cause__, redis.ConnectionError)
    with pytest.raises(BrokerUnavailableError):
        broker.processes.beat("h:1:a", {}, 0, False, ["default"], 60, holds_jobs=True)
    broker.close()


def test_a_server_that_goes_away_and_comes_back(
    redis_server_factory: RedisServerFactory, keys: KeySchema
) -> None:
    server = redis_server_factory(appendonly=False)
    broker = RedisBroker(make_client(server.url, max_connections=2), keys)
    broker.queues.store([("default", JOB)], [])
    server.kill()
    with pytest.raises(BrokerUnavailableError):
        broker.server_time()
    server.restart()
    assert broker.ping() is True
    broker.queues.store([("default", JOB)], [])
    assert broker.client.llen(keys.queue("default")) == 1  # no persistence: only the 2nd
    broker.close()


def test_a_read_only_replica_is_unavailable(
    redis_server_factory: RedisServerFactory, keys: KeySchema
) -> None:
    broker, demote = demotable_broker(redis_server_factory, keys)
    demote()
    with pytest.raises(BrokerUnavailableError) as caught:
        broker.sets.file("retry", time.time(), JOB)
    assert isinstance(caught.value.__cause__, redis.ReadOnlyError)
    broker.close()


def test_a_wrong_type_key_is_a_broker_error_with_its_cause(
    redis_url: str, keys: KeySchema, redis_client: redis.Redis
) -> None:
    broker = RedisBroker(make_client(redis_url, max_connections=1), keys)
    redis_client.set(keys.queue("default"), "not a list")
    with pytest.raises(BrokerError) as caught:
        broker.queues.store([("default", JOB)], [])
    assert not isinstance(caught.value, BrokerUnavailableError)
    assert isinstance(caught.value.__cause__, redis.ResponseError)
    assert "WRONGTYPE" in str(caught.value)
    broker.close()


def test_a_full_server_is_a_full_broker_not_an_unavailable_one(
    redis_server_factory: RedisServerFactory, keys: KeySchema
) -> None:
    server = redis_server_factory(appendonly=False)
    client = redis.Redis.from_url(server.url)
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", 1)  # below what Redis uses: every growing write refused
    broker = RedisBroker(make_client(server.url, max_connections=1), keys)
    with pytest.raises(BrokerFullError) as caught:
        broker.sets.file("retry", time.time(), JOB)
    assert isinstance(caught.value.__cause__, rex.OutOfMemoryError)
    assert broker.ping() is True  # full is not unreachable
    broker.close()
    client.close()


def test_a_full_server_refusing_a_script_is_a_full_broker() -> None:
    # Redis refuses a script's first memory-growing write with this reply; the claim
    # retries such a refusal with its no-op write first, so it must read as "full"
    inside = rex.ResponseError(
        "Error running script (call to f_58a5): @user_script:53: @user_script: 53: -OOM "
        "command not allowed when used memory > 'maxmemory'.")
    assert isinstance(translate(inside), BrokerFullError)
    assert not isinstance(translate(rex.ResponseError("ERR no OOM command here")),
                          BrokerFullError)
