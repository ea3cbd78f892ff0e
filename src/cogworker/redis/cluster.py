"""Redis Cluster: every connection goes to the master that owns the namespace's hash slot.

In cluster mode every key of a namespace carries the hash tag ``{namespace}``, so all of
them live in one hash slot, served by one master at a time. cogworker therefore needs no
cluster-aware command routing: each new connection asks the cluster (``CLUSTER SLOTS``,
the URL's nodes first, then every master the last answer named) which master owns that slot
and connects there. Everything else — Lua scripts, MULTI, blocking moves, pub/sub (a
``PUBLISH`` reaches subscribers on every node), the push lines — is plain single-node
Redis.

When the slot moves (resharding, or a replica promoted after its master failed), the old
node answers ``MOVED``: the connection drops itself and raises :class:`SlotMovedError`, on
which redis-py retries the command (or the whole MULTI) on a new connection, which asks
again. A command refused with ``MOVED`` was not run, so retrying it cannot run it twice. A
master that died is a plain connection error until the cluster has promoted a replica;
callers see ``BrokerUnavailableError`` meanwhile, as with any unreachable Redis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import redis
import redis.exceptions as rex
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.retry import Retry

Address = tuple[str, int]

ASK_TIMEOUT = 5.0


def namespace_slot(namespace: str) -> int:
    """The hash slot of every key of ``namespace`` in cluster mode (``{namespace}:…``)."""
    return key_slot(f"{{{namespace}}}".encode())


class SlotOwner:
    """Finds the master serving one hash slot by asking the cluster's nodes."""

    def __init__(self, nodes: Sequence[Address], slot: int,
                 node_options: dict[str, Any]) -> None:
        self.slot = slot
        self._nodes = list(nodes)
        self._learned: list[Address] = []
        self._answered: list[Address] = []  # the node that answered last: asked first
        self._node_options = node_options  # credentials and TLS, for asking a node

    def address(self) -> Address:
        """The owner's address; raises ``redis.ConnectionError`` when no node can tell."""
        problems: list[str] = []
        for host, port in dict.fromkeys([*self._answered, *self._nodes, *self._learned]):
            try:
                slots = self._ask(host, port)
            except rex.RedisError as exc:
                problems.append(f"{host}:{port}: {exc}")
                continue
            self._answered, self._learned = [(host, port)], _masters(slots)
            owner = _owner(slots, self.slot)
            if owner is not None:
                return owner if owner[0] else (host, owner[1])
            problems.append(f"{host}:{port}: no master serves slot {self.slot}")
        raise rex.ConnectionError(
            f"no Redis Cluster node could name the master of hash slot {self.slot} ("
            + "; ".join(problems) + ")")

    def _ask(self, host: str, port: int) -> list[Any]:
        # No retries (the next node is asked); RESP2, so redis-py 8 neither sends HELLO nor
        # sets up maintenance notifications for a connection used for one command.
        node = redis.Redis(host=host, port=port, socket_timeout=ASK_TIMEOUT,
                           socket_connect_timeout=ASK_TIMEOUT, retry=Retry(NoBackoff(), 0),
                           protocol=2, **self._node_options)
        try:
            reply: list[Any] = node.execute_command("CLUSTER", "SLOTS")  # type: ignore[no-untyped-call]
            return reply
        finally:
            node.close()


def _owner(slots: list[Any], slot: int) -> Address | None:
    for start, end, master, *_replicas in slots:
        if int(start) <= slot <= int(end):
            return _address(master)
    return None


def _masters(slots: list[Any]) -> list[Address]:
    return list(dict.fromkeys(_address(master) for _start, _end, master, *_ in slots))


def _address(node: Sequence[Any]) -> Address:
    host = node[0].decode() if isinstance(node[0], bytes) else str(node[0])
    return host, int(node[1])


def is_slot_moved(exc: BaseException) -> bool:
    """A ``MOVED`` reply: parsed into MovedError by redis-py >= 6, ("<slot> <host:port>"),
    left a ResponseError("MOVED <slot> <host:port>") by older versions and the push line."""
    return isinstance(exc, rex.MovedError) or (
        isinstance(exc, rex.ResponseError) and str(exc).startswith("MOVED "))


class SlotMovedError(rex.ConnectionError):
    """The node no longer serves the slot: the command did not run; retry it elsewhere."""


class SlotOwnerConnection(redis.Connection):
    """A connection that opens to the slot owner, and drops itself on ``MOVED``."""

    def __init__(self, **kwargs: Any) -> None:
        self.slot_owner: SlotOwner = kwargs.pop("slot_owner")
        cast(Any, super()).__init__(**kwargs)  # redis-py types __init__ in some versions only

    def _connect(self) -> Any:
        self.host, self.port = self.slot_owner.address()
        return cast(Any, super())._connect()

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except rex.ResponseError as exc:
            if not is_slot_moved(exc):
                raise
            cast(Any, self).disconnect()
            raise SlotMovedError(f"hash slot moved: {str(exc).removeprefix('MOVED ')}") from exc


class SlotOwnerSSLConnection(SlotOwnerConnection, redis.SSLConnection):
    """:class:`SlotOwnerConnection` over TLS."""


class SlotOwnerPool(redis.BlockingConnectionPool):
    """A blocking pool of :class:`SlotOwnerConnection`."""

    def __init__(self, slot_owner: SlotOwner, *, ssl: bool, **kwargs: Any) -> None:
        kwargs["connection_class"] = SlotOwnerSSLConnection if ssl else SlotOwnerConnection
        # Always safe to retry (the command did not run); redis-py 5 retries nothing else.
        kwargs["retry_on_error"] = [SlotMovedError]
        cast(Any, super()).__init__(**kwargs)
        self.connection_kwargs["slot_owner"] = slot_owner
