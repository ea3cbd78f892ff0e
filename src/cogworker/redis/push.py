"""The hot path of ``perform_async``: one job onto one queue in one round trip.

The first push of a queue in a while runs ``push.lua`` (register the queue, LPUSH, wake the
workers), atomically. After that, for :data:`REGISTRY_REFRESH` seconds, this client knows
the queue is registered (the registry is never pruned, and every worker's heartbeat
re-registers its queues), so a push is just LPUSH + PUBLISH written together on one
connection: two of Redis's cheapest commands, one round trip, no script to run. The LPUSH
is the write that stores the job; the PUBLISH only wakes idle workers sooner.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import redis

from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.scripts import Scripts

REGISTRY_REFRESH = 60.0


class Pusher:
    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts
        self._registered: dict[str, float] = {}
        self._lock = threading.Lock()

    def push(self, queue: str, raw: str) -> None:
        """Store one job on ``queue``; raises BrokerError/BrokerUnavailableError."""
        now = time.monotonic()
        if now - self._registered.get(queue, -REGISTRY_REFRESH) < REGISTRY_REFRESH:
            self._push_known(queue, raw)
            return
        self._scripts.run("cogworker.redis", "push",
                          [self._keys.queues, self._keys.queue(queue)],
                          [queue, self._keys.wakeup, raw])
        with self._lock:
            self._registered[queue] = now

    def forget(self) -> None:
        """Register every queue again on its next push."""
        with self._lock:
            self._registered.clear()

    def _push_known(self, queue: str, raw: str) -> None:
        pool: Any = self._client.connection_pool
        with translate_errors():
            connection = pool.get_connection()
            try:
                connection.send_packed_command(connection.pack_commands([
                    ("LPUSH", self._keys.queue(queue), raw),
                    ("PUBLISH", self._keys.wakeup, queue),
                ]))
                replies = [_read(connection), _read(connection)]
            except BaseException:
                connection.disconnect()  # replies may be half read: never reuse it
                raise
            finally:
                pool.release(connection)
            for reply in replies:
                if isinstance(reply, Exception):
                    raise reply


def _read(connection: Any) -> Any:
    """One reply; an error reply is returned (not raised) so the second is still read."""
    try:
        return connection.read_response()
    except redis.ResponseError as exc:
        return exc
