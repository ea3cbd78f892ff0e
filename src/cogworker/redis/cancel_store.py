"""``broker.extension(CANCELLATIONS)`` on Redis: one sorted set and one pub/sub channel.

Layout (see ``docs/reference/redis-keys.md``): ``<ns>:cancelled``, a sorted set of cancelled
jids scored by when their cancellation expires (epoch seconds); announcements go over the
channel ``<ns>:cancel``. A cancel is one Lua step (``cancel.lua``): ``ZADD``, trim the
expired, ``LREM``/``ZREM`` of the waiting entry, ``PUBLISH``. In cluster mode the sorted set
and the queues share the namespace's hash tag, so the step stays on one shard.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import redis

from cogworker.core.broker.cancellation import WaitingEntry, require_jid
from cogworker.core.broker.subscription import Subscription
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.pubsub import RedisSubscription
from cogworker.redis.replies import as_text, wire
from cogworker.redis.scripts import KeyOrArg, Scripts


class RedisCancellationStore:
    """:class:`cogworker.core.broker.CancellationStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def _container(self, waiting: WaitingEntry) -> tuple[str, str]:
        if waiting.place == "queue":
            return self._keys.queue(waiting.queue), "list"
        return self._keys.sorted_set(waiting.place), "zset"

    def cancel(self, jid: str, until: float, now: float,
               waiting: WaitingEntry | None = None) -> bool:
        require_jid(jid)
        args: list[KeyOrArg] = [jid, repr(float(until)), repr(float(now)),
                                self._keys.cancel_channel]
        if waiting is None:
            container = self._keys.cancellations  # the header's two keys, one of them unused
            args += ["", ""]
        else:
            container, kind = self._container(waiting)
            args += [kind, wire(waiting.raw)]
        return bool(self._scripts.run("cogworker.redis", "cancel",
                                      [self._keys.cancellations, container], args))

    def is_cancelled(self, jid: str, now: float) -> bool:
        require_jid(jid)
        with translate_errors():
            score = self._client.zscore(self._keys.cancellations, jid)
        return score is not None and float(score) >= now

    def active(self, now: float) -> dict[str, float]:
        with translate_errors():
            entries: list[Any] = self._client.zrangebyscore(
                self._keys.cancellations, repr(float(now)), "+inf", withscores=True)
        return {as_text(member): float(score) for member, score in entries}

    def withdraw(self, jid: str) -> bool:
        require_jid(jid)
        with translate_errors():
            return bool(self._client.zrem(self._keys.cancellations, jid))

    def subscribe(self) -> AbstractContextManager[Subscription]:
        return RedisSubscription.opened(self._client, self._keys.cancel_channel)
