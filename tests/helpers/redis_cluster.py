"""A real Redis Cluster of private redis-servers, for the cluster tests."""

from __future__ import annotations

import random
import socket
import time
from dataclasses import dataclass
from typing import Any, cast

import redis

from cogworker.redis.server import RedisServer
from helpers.redis_servers import RedisServerFactory

SLOTS = 16384
BUS_OFFSET = 10_000  # a node's cluster bus listens on its port + 10000 (Redis < 7 fixes it)


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_port() -> int:
    """A free port whose bus port (+10000) is free and valid too."""
    for _ in range(200):
        port = random.randrange(20_000, 30_000)
        if _bindable(port) and _bindable(port + BUS_OFFSET):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def command(client: redis.Redis, *args: Any) -> Any:
    return cast(Any, client).execute_command(*args)


@dataclass
class Cluster:
    servers: list[RedisServer]

    def port(self, index: int) -> int:
        port = self.servers[index].port
        assert port is not None  # cluster nodes listen on TCP
        return port

    def client(self, index: int) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port(index))

    def node_id(self, index: int) -> str:
        client = self.client(index)
        try:
            return str(command(client, "CLUSTER", "MYID").decode())
        finally:
            client.close()

    def _owners_seen(self, slot: int) -> list[int]:
        """The index of the server that serves ``slot`` as each live node sees it, in node
        order (a killed node is left out)."""
        ports = [self.port(i) for i in range(len(self.servers))]
        seen = []
        for index in range(len(self.servers)):
            client = self.client(index)
            try:
                slots = command(client, "CLUSTER", "SLOTS")
            except redis.ConnectionError:
                continue  # a killed node
            finally:
                client.close()
            seen += [ports.index(int(master[1])) for start, end, master, *_ in slots
                     if start <= slot <= end][:1]
        return seen

    def agreed_owner_of(self, slot: int) -> int | None:
        """The index of the server that serves ``slot`` when every live node says the same
        (a fail-over is complete for clients only then), else None."""
        owners = set(self._owners_seen(slot))
        return owners.pop() if len(owners) == 1 else None

    def owner_of(self, slot: int) -> int:
        """The index of the server that serves ``slot``, as the first live node sees it."""
        seen = self._owners_seen(slot)
        if not seen:
            raise AssertionError(f"no node serves slot {slot}")
        return seen[0]

    def url(self, index: int = 0, scheme: str = "redis+cluster") -> str:
        return f"{scheme}://127.0.0.1:{self.port(index)}"

    def move_slot(self, slot: int, to: int) -> None:
        """Reshard ``slot`` onto server ``to``, keys and all, as ``redis-cli --cluster
        reshard`` does: IMPORTING / MIGRATING, MIGRATE every key, then SETSLOT NODE."""
        source = self.owner_of(slot)
        target_id, source_id = self.node_id(to), self.node_id(source)
        src, dst = self.client(source), self.client(to)
        try:
            command(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
            command(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
            while keys := command(src, "CLUSTER", "GETKEYSINSLOT", slot, 100):
                command(src, "MIGRATE", "127.0.0.1", self.port(to), "", 0, 5000,
                        "KEYS", *keys)
            for index in range(len(self.servers)):
                node = self.client(index)
                command(node, "CLUSTER", "SETSLOT", slot, "NODE", target_id)
                node.close()
        finally:
            src.close()
            dst.close()


    def add_replica(self, factory: RedisServerFactory, of: int) -> int:
        """Start a node replicating server ``of``; returns its index once it is in sync."""
        self.servers.append(_node(factory))
        index = len(self.servers) - 1
        replica = self.client(index)
        try:
            command(replica, "CLUSTER", "MEET", "127.0.0.1", self.port(0))
            master_id = self.node_id(of)
            deadline = time.monotonic() + 30
            while True:  # REPLICATE needs the master to be known to the new node first
                try:
                    command(replica, "CLUSTER", "REPLICATE", master_id)
                    break
                except redis.ResponseError:
                    assert time.monotonic() < deadline, "the replica never learned its master"
                    time.sleep(0.1)
            while replica.info("replication").get("master_link_status") != "up":
                assert time.monotonic() < deadline, "the replica never synced"
                time.sleep(0.1)
            replica_id = self.node_id(index)
            # Only masters that know it as the replica of ``of`` vote for its promotion, and
            # they learn it by gossip: if ``of`` died before that, it would never be promoted.
            while not all(self._knows_replica(other, replica_id, master_id)
                          for other in range(index) if other != of):
                assert time.monotonic() < deadline, "the masters never learned the replica"
                time.sleep(0.1)
        finally:
            replica.close()
        return index

    def _knows_replica(self, index: int, replica_id: str, master_id: str) -> bool:
        client = self.client(index)
        try:
            nodes = command(client, "CLUSTER", "NODES").decode()
        finally:
            client.close()
        return any(line.split()[0] == replica_id and "slave" in line.split()[2]
                   and line.split()[3] == master_id for line in nodes.splitlines())


def _node(factory: RedisServerFactory) -> RedisServer:
    return factory(appendonly=False, port=cluster_port(),
                   extra_args=("--cluster-enabled", "yes", "--save", "",
                               "--cluster-node-timeout", "2000"))


def start_cluster(factory: RedisServerFactory, masters: int = 3) -> Cluster:
    """``masters`` nodes sharing the 16384 slots evenly, joined and reporting ``ok``."""
    servers = [_node(factory) for _ in range(masters)]
    cluster = Cluster(servers)
    share = SLOTS // masters
    for index in range(masters):
        client = cluster.client(index)
        last = SLOTS - 1 if index == masters - 1 else (index + 1) * share - 1
        command(client, "CLUSTER", "ADDSLOTS", *range(index * share, last + 1))
        if index:
            command(client, "CLUSTER", "MEET", "127.0.0.1", servers[0].port)
        client.close()
    deadline = time.monotonic() + 30
    while not all(_ready(cluster, index, masters) for index in range(masters)):
        assert time.monotonic() < deadline, "the cluster never reported cluster_state:ok"
        time.sleep(0.1)
    return cluster


def _ready(cluster: Cluster, index: int, masters: int) -> bool:
    client = cluster.client(index)
    try:
        info = command(client, "CLUSTER", "INFO").decode()
    finally:
        client.close()
    fields = dict(line.split(":", 1) for line in info.split() if ":" in line)
    return fields.get("cluster_state") == "ok" and fields.get("cluster_known_nodes") == str(
        masters)
