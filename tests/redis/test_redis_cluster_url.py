"""``redis+cluster://`` URLs: the nodes named are asked which master serves the namespace's
hash slot, and every connection goes there (a real three-master cluster)."""

from __future__ import annotations

import time

import pytest
import redis

from cogworker.app import App
from cogworker.core.errors import BrokerUnavailableError, ConfigurationError
from cogworker.redis.broker import RedisBroker
from cogworker.redis.cluster import SlotOwnerSSLConnection, namespace_slot
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.server_process import free_port
from helpers.redis_access import keys_of
from helpers.redis_cluster import start_cluster
from helpers.redis_servers import RedisServerFactory

JOB = '{"class":"Work","args":[],"queue":"default","jid":"0123456789abcdef01234567"}'


def test_the_master_of_the_slot_is_found_past_a_dead_node_and_holds_every_key(
    redis_server_factory: RedisServerFactory, namespace: str,
) -> None:
    cluster = start_cluster(redis_server_factory)
    keys = KeySchema(namespace, cluster=True)
    home = cluster.owner_of(namespace_slot(namespace))
    other = (home + 1) % 3
    url = f"redis+cluster://127.0.0.1:{free_port()},127.0.0.1:{cluster.port(other)}"
    broker = RedisBroker(make_client(url, max_connections=4, namespace=namespace), keys)
    try:
        broker.queues.store([("default", JOB)], [])  # push.lua
        broker.queues.store([("default", JOB)], [])  # a push line
        broker.queues.store([("default", JOB), ("low", JOB)], [(time.time() + 60, JOB)])  # MULTI
        assert broker.server_time() > 0
    finally:
        broker.close()
    owner = cluster.client(home)
    assert owner.llen(keys.queue("default")) == 3
    assert owner.zcard(keys.schedule) == 1
    assert [int(cluster.client(i).dbsize()) == 0 for i in range(3)] == [
        i != home for i in range(3)]
    owner.close()


def test_no_reachable_node_is_unavailable_and_names_the_slot(namespace: str) -> None:
    url = f"redis+cluster://127.0.0.1:{free_port()}"
    broker = RedisBroker(make_client(url, max_connections=1, namespace=namespace),
                         KeySchema(namespace, cluster=True))
    with pytest.raises(BrokerUnavailableError) as caught:
        broker.queues.store([("default", JOB)], [])
    assert f"master of hash slot {namespace_slot(namespace)}" in str(caught.value)
    broker.close()


def test_a_cluster_url_makes_the_keys_hash_tagged(namespace: str) -> None:
    app = App(redis_url="redis+cluster://node1:6379,node2:6379", namespace=namespace)
    assert keys_of(app).cluster is True
    assert keys_of(app).queue("default") == f"{{{namespace}}}:queue:default"


def test_rediss_cluster_url_uses_tls_connections() -> None:
    client = make_client("rediss+cluster://user:secret@node1:6380", max_connections=2)
    assert issubclass(client.connection_pool.connection_class, SlotOwnerSSLConnection)
    assert issubclass(client.connection_pool.connection_class, redis.SSLConnection)


def test_a_cluster_url_with_a_database_says_a_cluster_has_only_database_0() -> None:
    with pytest.raises(ConfigurationError, match="a cluster has only database 0") as caught:
        make_client("redis+cluster://:pw@h:6379/1", max_connections=1)
    assert "redis+cluster://host:port[,host:port...]" in str(caught.value)
    assert "pw" not in str(caught.value)
