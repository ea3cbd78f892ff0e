"""Pub/sub subscriptions on a connection of their own (remote control, wake-ups).

A subscription never borrows a connection from the broker's pool: it opens one dedicated
connection with the same settings, so a reader blocked in :meth:`RedisSubscription.get`
never starves the processor threads. Pub/sub does not queue: a message published before
the subscription is confirmed is lost, which is why :meth:`RedisSubscription.open` waits
for the server's confirmation before returning.

Threading: ``get`` belongs to one thread. ``close`` drops the connection without sending
UNSUBSCRIBE; stop the reading thread before closing it from another one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from redis.client import PubSub

from cogworker.core.errors import BrokerUnavailableError
from cogworker.redis.errors import translate_errors
from cogworker.redis.replies import as_text

CONFIRM_TIMEOUT = 5.0


class RedisSubscription:
    """A live subscription to one channel; :meth:`get` returns message bodies as text."""

    def __init__(self, pool: redis.ConnectionPool, pubsub: PubSub, channel: str) -> None:
        self.channel = channel
        self._pool = pool
        self._pubsub = pubsub
        self._closed = False
        self._close_lock = threading.Lock()

    @classmethod
    @contextmanager
    def opened(cls, client: redis.Redis, channel: str) -> Iterator[RedisSubscription]:
        """:meth:`open` as a context manager that closes the subscription afterwards."""
        subscription = cls.open(client, channel)
        try:
            yield subscription
        finally:
            subscription.close()

    @classmethod
    def open(cls, client: redis.Redis, channel: str) -> RedisSubscription:
        """Subscribe on a dedicated connection and wait for the server's confirmation.

        Raises ``BrokerUnavailableError`` when Redis cannot be reached or does not confirm
        within 5 seconds.
        """
        source = client.connection_pool
        pool = redis.ConnectionPool(
            connection_class=source.connection_class,
            max_connections=1,
            **source.connection_kwargs,
        )
        pubsub = redis.Redis(connection_pool=pool).pubsub()  # type: ignore[no-untyped-call, unused-ignore]
        subscription = cls(pool, pubsub, channel)
        try:
            with translate_errors():
                pubsub.subscribe(channel)
            subscription._await_confirmation()
        except BaseException:
            subscription.close()
            raise
        return subscription

    def _await_confirmation(self) -> None:
        deadline = time.monotonic() + CONFIRM_TIMEOUT
        while (remaining := deadline - time.monotonic()) > 0:
            with translate_errors():
                message = self._pubsub.get_message(timeout=remaining)
            if message is not None and message["type"] in ("subscribe", b"subscribe"):
                return
        raise BrokerUnavailableError(
            f"Redis did not confirm the subscription to {self.channel!r} within "
            f"{CONFIRM_TIMEOUT:.0f} s; check that the server is reachable and not overloaded"
        )

    def get(self, timeout: float) -> str | None:
        """The next message on the channel, or None after ``timeout`` seconds.

        Raises ``BrokerUnavailableError`` when the connection is lost and cannot be
        re-established (a re-established connection subscribes again by itself).
        """
        deadline = time.monotonic() + max(timeout, 0.0)
        reconnected = False
        while True:
            remaining = max(deadline - time.monotonic(), 0.0)
            try:
                message = self._read(remaining)
            except BrokerUnavailableError:
                # Reading is safe to repeat: once, reconnect (which subscribes again).
                if reconnected:
                    raise
                reconnected = True
                self._reconnect()
                continue
            if message is not None and message["type"] in ("message", b"message"):
                data: bytes | str = message["data"]
                return as_text(data)
            if remaining <= 0:
                return None

    def _read(self, timeout: float) -> dict[str, Any] | None:
        with translate_errors():
            message: dict[str, Any] | None = self._pubsub.get_message(
                ignore_subscribe_messages=True, timeout=timeout)
        return message

    def _reconnect(self) -> None:
        connection: Any = self._pubsub.connection
        with translate_errors():
            connection.disconnect()
            connection.connect()  # its connect callback subscribes the channel again

    def close(self) -> None:
        """Drop the connection. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._pubsub.close()
        finally:
            self._pool.disconnect()
