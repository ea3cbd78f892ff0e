"""``RedisAccess``: what a Redis-specific plugin may use of the Redis broker, documented.

The broker contract (:mod:`cogworker.core.broker`) is all a portable plugin needs. A plugin
that is Redis-specific on purpose (a fetch strategy on Redis Streams, say) also needs the
client, the key names and the script runner; it gets them from the broker through this
Protocol, checked with ``isinstance`` (it is runtime-checkable), never by probing attribute
names::

    from cogworker.redis import RedisAccess, translate_errors

    @cogworker.hookimpl
    def cogworker_make_fetcher(app, broker):
        if not isinstance(broker, RedisAccess):
            return None  # another broker: leave the slot to a portable strategy
        return StreamsFetcher(broker.client, broker.keys, broker.scripts, app.identity)

Rules for such a plugin: every Redis call goes through :func:`translate_errors`, so its
callers see ``BrokerUnavailableError``/``BrokerError`` like everyone else's; its keys come
from :class:`~cogworker.redis.keys.KeySchema` (or are built under ``keys.prefix``), so
namespaces and cluster hash tags hold; its Lua lives in its own package's ``lua/`` folder
and runs through ``scripts.run(package, name, keys, args)``, every key in ``KEYS``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import redis

from cogworker.redis.keys import KeySchema
from cogworker.redis.scripts import Scripts


@runtime_checkable
class RedisAccess(Protocol):
    """A broker on Redis: its client, key schema and script runner. ``RedisBroker`` is one."""

    @property
    def client(self) -> redis.Redis:
        """The broker's client (bytes replies, the broker's connection pool)."""
        ...

    @property
    def keys(self) -> KeySchema:
        """Every key name of the broker's namespace."""
        ...

    @property
    def scripts(self) -> Scripts:
        """Runs ``.lua`` files of any package on the broker's client (EVALSHA, errors
        translated)."""
        ...
