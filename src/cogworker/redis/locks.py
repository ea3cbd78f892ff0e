"""Owner-checked locks on Redis: the value of a lock key is its owner's jid.

Acquire is ``SET NX EX``; extend and release are Lua compare-and-act steps, so a stale owner
can never shorten, extend or release a lock that has passed to a newer one.
"""

from __future__ import annotations

import math

import redis

from cogworker.redis.errors import translate_errors
from cogworker.redis.replies import as_text
from cogworker.redis.scripts import Scripts

LUA_PACKAGE = "cogworker.redis"


def whole_seconds(ttl: float) -> int:
    """A TTL in whole seconds for EXPIRE/EX: rounded up, and at least 1."""
    return max(1, math.ceil(ttl))


class RedisLocks:
    """:class:`cogworker.core.broker.LockBackend` on Redis."""

    def __init__(self, client: redis.Redis, scripts: Scripts) -> None:
        self._client = client
        self._scripts = scripts

    def acquire(self, key: str, owner: str, ttl: float) -> bool:
        """Set ``key`` to ``owner`` for ``ttl`` seconds (rounded up) if nobody holds it."""
        with translate_errors():
            return bool(self._client.set(key, owner, nx=True, ex=whole_seconds(ttl)))

    def extend(self, key: str, owner: str, ttl: float) -> bool:
        """Set the TTL to ``ttl`` seconds (rounded up) only if ``owner`` still holds it."""
        result = self._scripts.run(
            LUA_PACKAGE, "expire_if_owned", [key], [owner, whole_seconds(ttl)]
        )
        return bool(result)

    def release(self, key: str, owner: str) -> bool:
        """Delete ``key`` only if ``owner`` still holds it."""
        return bool(self._scripts.run(LUA_PACKAGE, "delete_if_owned", [key], [owner]))

    def owner(self, key: str) -> str | None:
        """Who holds ``key`` now, or None."""
        with translate_errors():
            value: bytes | str | None = self._client.get(key)
        return None if value is None else as_text(value)
