"""``broker.extension(ATTEMPTS)`` on Redis: the list ``<ns>:job_attempts:<jid>``.

The key and its entries (``{attempt, failed_at, outcome, error_class, error_message}`` as
JSON, oldest at the head) are the original's. An append is one MULTI: ``RPUSH``, ``LTRIM``
to the newest ``keep``, ``EXPIRE``. ``sets.delete`` and ``sets.clear`` of retry and dead
drop the trails of their jids too (the Redis broker always did).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import redis

from cogworker.core.broker.attempts import TRAIL_LIMIT, TRAIL_TTL, Attempt
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text

CLEAR_BATCH = 500
"""Keys per DEL of :meth:`RedisAttemptStore.clear`."""


class RedisAttemptStore:
    """:class:`cogworker.core.broker.AttemptStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema) -> None:
        self._client = client
        self._keys = keys

    def append(self, jid: str, attempt: Attempt, *, keep: int = TRAIL_LIMIT,
               ttl: float = TRAIL_TTL) -> None:
        if keep < 1 or ttl <= 0:
            raise ValueError(f"a trail keeps at least 1 entry for more than 0 s, not "
                             f"keep={keep!r}, ttl={ttl!r}")
        key = self._keys.job_attempts(jid)
        pipe = self._client.pipeline(transaction=True)
        pipe.rpush(key, json.dumps(attempt.to_dict(), separators=(",", ":"),
                                   ensure_ascii=False))
        pipe.ltrim(key, -keep, -1)
        pipe.expire(key, max(1, math.ceil(ttl)))
        with translate_errors():
            pipe.execute()

    def trail(self, jid: str, limit: int = TRAIL_LIMIT) -> list[Attempt]:
        if limit < 1:
            raise ValueError(f"a trail read needs a limit of at least 1, not {limit!r}")
        with translate_errors():
            values = self._client.lrange(self._keys.job_attempts(jid), -limit, -1)
        trail = []
        for value in values:
            try:
                data = json.loads(as_text(value))
            except ValueError:
                continue
            entry = Attempt.from_dict(data) if isinstance(data, dict) else None
            if entry is not None:
                trail.append(entry)
        return trail

    def clear(self, jids: Sequence[str]) -> int:
        keys = [self._keys.job_attempts(jid) for jid in dict.fromkeys(jids)]
        removed = 0
        with translate_errors():
            for start in range(0, len(keys), CLEAR_BATCH):
                removed += int(self._client.delete(*keys[start:start + CLEAR_BATCH]))
        return removed
