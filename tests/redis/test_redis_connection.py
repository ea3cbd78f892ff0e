"""Clients from URLs (TCP, unix socket, TLS settings, Sentinel) and credential redaction."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.retry import Retry

from cogworker.core.errors import ConfigurationError
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import (
    CONNECTION_RETRIES,
    HEALTH_CHECK_INTERVAL,
    POOL_TIMEOUT,
    SOCKET_TIMEOUT,
    make_client,
    redact_url,
)
from cogworker.redis.keys import KeySchema
from cogworker.redis.server_process import free_port
from helpers.redis_servers import RedisServerFactory


def test_tcp_url_gives_a_configured_blocking_pool(redis_url: str) -> None:
    client = make_client(redis_url, max_connections=7)
    pool = client.connection_pool
    assert isinstance(pool, redis.BlockingConnectionPool)
    assert pool.max_connections == 7
    assert pool.timeout == POOL_TIMEOUT
    options = pool.connection_kwargs
    assert options["health_check_interval"] == HEALTH_CHECK_INTERVAL
    assert options["socket_keepalive"] is True
    assert options["socket_timeout"] == SOCKET_TIMEOUT  # set whatever redis-py's default
    retry = options["retry"]
    assert isinstance(retry, Retry)
    assert getattr(retry, "_retries", None) == CONNECTION_RETRIES  # redis-py 5 has no getter
    assert client.ping() is True
    client.close()


def test_a_socket_timeout_in_the_url_overrides_ours() -> None:
    listener = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    port = listener.getsockname()[1]
    client = make_client(f"redis://127.0.0.1:{port}/0?socket_timeout=0.2", max_connections=1)
    assert client.connection_pool.connection_kwargs["socket_timeout"] == 0.2
    with pytest.raises(redis.TimeoutError):
        client.ping()
    client.close()
    listener.close()


def test_decoded_responses_on_request(redis_url: str, namespace: str,
                                      redis_client: redis.Redis) -> None:
    client = make_client(redis_url, max_connections=1, decode_responses=True)
    client.set(f"{namespace}:k", "v")
    assert client.get(f"{namespace}:k") == "v"
    client.close()


def test_unix_socket_url(redis_server_factory: RedisServerFactory) -> None:
    server = redis_server_factory(unix_socket=True, appendonly=False)
    assert server.url.startswith("unix://")
    client = make_client(server.url, max_connections=2)
    assert client.ping() is True
    client.close()


def test_rediss_url_uses_tls_connections() -> None:
    client = make_client("rediss://user:secret@redis.example:6380/1", max_connections=2)
    assert issubclass(client.connection_pool.connection_class, redis.SSLConnection)
    assert client.connection_pool.connection_kwargs["db"] == 1


@pytest.mark.parametrize("url", ["http://localhost:6379", "localhost:6379", "redis://[::1",
                                 "redis+sentinel://:pw@/mymaster",
                                 "redis+sentinel://h:26379/", "redis+sentinel://h:x/m/0",
                                 "redis+sentinel://h:26379/m/zero", "redis+cluster://",
                                 "redis+cluster://:pw@/", "redis+cluster://h:6379/1",
                                 "redis+cluster://h:x", "redis+cluster://h:6379/0/extra"])
def test_unusable_urls_are_configuration_errors(url: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        make_client(url, max_connections=1)
    assert caught.value.field == "redis_url"
    assert "pw" not in str(caught.value)


def test_a_killed_connection_is_reestablished_transparently(
    redis_url: str, namespace: str, redis_client: redis.Redis
) -> None:
    client = make_client(redis_url, max_connections=1)
    first_id = client.client_id()
    assert redis_client.client_kill_filter(_id=str(first_id)) == 1
    client.set(f"{namespace}:after-kill", "1")  # no error: reconnected and retried
    assert client.client_id() != first_id
    assert redis_client.get(f"{namespace}:after-kill") == b"1"
    client.close()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://user:secret@host:6379/0", "redis://host:6379/0"),
        ("redis://:secret@host:6379", "redis://host:6379"),
        ("rediss://host:6380/2", "rediss://host:6380/2"),
        ("unix://user:secret@/tmp/redis.sock?db=1&password=secret",
         "unix:///tmp/redis.sock?db=1&password=***"),
        ("redis+sentinel://u:p%40ss@s1:26379,s2:26379/mymaster/0",
         "redis+sentinel://s1:26379,s2:26379/mymaster/0"),
    ],
)
def test_redact_url_removes_credentials(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.fixture
def sentinel_port(
    redis_server_factory: RedisServerFactory, redis_server_binary: str, tmp_path: Path
) -> Iterator[int]:
    """A private master and one sentinel monitoring it as ``mymaster``."""
    master = redis_server_factory(appendonly=False)
    port = free_port()
    config = tmp_path / "sentinel.conf"
    config.write_text(f"port {port}\nbind 127.0.0.1\ndir {tmp_path}\n"
                      f"sentinel monitor mymaster 127.0.0.1 {master.port} 1\n")
    with (tmp_path / "sentinel.log").open("wb") as log:
        process = subprocess.Popen([redis_server_binary, str(config), "--sentinel"],
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        probe = redis.Redis(port=port, socket_connect_timeout=1)
        for _ in range(200):  # bounded wait for the sentinel to accept connections
            try:
                if probe.sentinel_master("mymaster"):
                    break
            except redis.ConnectionError:
                time.sleep(0.05)
        probe.close()
        yield port
    finally:
        process.terminate()
        process.wait(10)


def test_sentinel_url_reaches_the_master(sentinel_port: int, namespace: str) -> None:
    client = make_client(f"redis+sentinel://127.0.0.1:{sentinel_port}/mymaster/0",
                         max_connections=2)
    assert client.set(f"{namespace}:k", "v") is True
    assert client.get(f"{namespace}:k") == b"v"
    assert client.info("replication")["role"] == "master"
    client.close()


def push_through_a_push_line(url: str, keys: KeySchema) -> list[bytes | str]:
    """Two single pushes (the second over the pusher's own connection); what is queued."""
    broker = RedisBroker(make_client(url, max_connections=2), keys)
    try:
        for n in range(2):
            broker.queues.store([("default", f'{{"class":"J","args":[{n}]}}')], [])
        commands = [entry["cmd"] for entry in broker.client.client_list()]
        assert "publish" in commands  # the push connection's last command
        return broker.client.lrange(keys.queue("default"), 0, -1)
    finally:
        broker.client.delete(keys.queue("default"), keys.queues)
        broker.close()


def test_pushes_over_a_unix_socket(redis_server_factory: RedisServerFactory,
                                   keys: KeySchema) -> None:
    server = redis_server_factory(unix_socket=True, appendonly=False)
    assert push_through_a_push_line(server.url, keys) == [
        b'{"class":"J","args":[1]}', b'{"class":"J","args":[0]}']


def test_pushes_through_sentinel_reach_the_master(sentinel_port: int, keys: KeySchema) -> None:
    url = f"redis+sentinel://127.0.0.1:{sentinel_port}/mymaster/0"
    assert push_through_a_push_line(url, keys) == [
        b'{"class":"J","args":[1]}', b'{"class":"J","args":[0]}']
