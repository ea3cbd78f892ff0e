"""``broker.locks`` on Redis: owner-checked locks whose value is the owner's jid.

A lock name becomes a key only through :meth:`KeySchema.lock
<cogworker.redis.keys.KeySchema.lock>` (``unique:<digest>`` -> ``<ns>:unique:<digest>``,
``periodic:running:<pjid>`` -> the original's cron key). Acquire is ``SET NX EX``; extend,
retake and release are Lua compare-and-act steps, so a stale owner can never shorten,
extend or release a lock that has passed to a newer one. A scan walks ``SCAN`` with a
``MATCH`` pattern in bounded steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import redis

from cogworker.core.broker import LockPage, LockRecord
from cogworker.redis.errors import translate_errors
from cogworker.redis.globs import ascii_case_glob, ascii_lower, glob_escape
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from cogworker.redis.scripts import Scripts

LUA_PACKAGE = "cogworker.redis"
SCAN_STEPS = 24
"""SCAN calls one scan step makes at most before it hands back its cursor."""
MAX_SCAN_COUNT = 8000
"""Each SCAN asks for as many keys as the step still needs, twice as many after a call that
found none (up to this), so a sparse keyspace is crossed in few calls and a dense one is
never read far past the step."""
MIN_SCAN_COUNT = 10


def whole_seconds(ttl: float) -> int:
    """A TTL in whole seconds for EXPIRE/EX: rounded up, and at least 1."""
    return max(1, math.ceil(ttl))


def _ttl(pttl: object) -> float | None:
    return pttl / 1000 if isinstance(pttl, int) and pttl >= 0 else None


class RedisLockStore:
    """:class:`cogworker.core.broker.LockStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def acquire(self, name: str, owner: str, ttl: float) -> bool:
        key = self._keys.lock(name)
        with translate_errors():
            return bool(self._client.set(key, owner, nx=True, ex=whole_seconds(ttl)))

    def extend(self, name: str, owner: str, ttl: float) -> bool:
        return bool(self._scripts.run(LUA_PACKAGE, "expire_if_owned", [self._keys.lock(name)],
                                      [owner, whole_seconds(ttl)]))

    def retake(self, name: str, owner: str, ttl: float) -> bool:
        return bool(self._scripts.run(LUA_PACKAGE, "retake_lock", [self._keys.lock(name)],
                                      [owner, whole_seconds(ttl)]))

    def release(self, name: str, owner: str) -> bool:
        return bool(self._scripts.run(LUA_PACKAGE, "delete_if_owned", [self._keys.lock(name)],
                                      [owner]))

    def owner(self, name: str) -> str | None:
        key = self._keys.lock(name)
        with translate_errors():
            value: bytes | str | None = self._client.get(key)
        return None if value is None else as_text(value)

    def get(self, names: Sequence[str]) -> dict[str, LockRecord]:
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        keys = [self._keys.lock(name) for name in wanted]
        return {record.name: record for record in self._read(list(zip(wanted, keys,
                                                                         strict=True)))}

    def _read(self, named_keys: list[tuple[str, str]]) -> list[LockRecord]:
        """The held locks among ``(name, key)`` pairs; values that are not locks skipped."""
        pipe = self._client.pipeline(transaction=False)
        for _name, key in named_keys:
            pipe.get(key)
            pipe.pttl(key)
        with translate_errors():
            replies: list[Any] = pipe.execute(raise_on_error=False)
        records = []
        for index, (name, _key) in enumerate(named_keys):
            owner = replies[2 * index]
            if owner is None or isinstance(owner, Exception):
                continue  # free, released meanwhile, or not a lock value
            records.append(LockRecord(name, as_text(owner), _ttl(replies[2 * index + 1])))
        return records

    def scan(self, prefix: str, *, contains: str = "", cursor: str | None = None,
             limit: int = 50) -> LockPage:
        """One bounded step (see the Protocol). The cursor is ``<SCAN cursor>`` or, when a
        SCAN reply held more locks than the step could return, ``<SCAN cursor it came
        from>:<COUNT>:<last name returned>``: that reply is read again and the names up to
        the last one returned are skipped."""
        if limit < 1:
            raise ValueError(f"a lock scan returns at least 1 lock per step, not {limit}")
        if not prefix:
            raise ValueError("a lock scan needs a name prefix, such as 'unique:'")
        key_prefix = self._keys.lock(prefix)
        pattern = glob_escape(key_prefix) + "*"
        if contains:
            pattern += ascii_case_glob(contains) + "*"
        position, count, after = _parse_cursor(cursor, limit)
        found: list[tuple[str, str]] = []
        for _step in range(SCAN_STEPS):
            with translate_errors():
                following, batch = self._client.scan(position, match=pattern, count=count)
            names = sorted(prefix + as_text(key)[len(key_prefix):] for key in batch)
            names = [name for name in names if _contains(name[len(prefix):], contains)
                     and (after is None or name > after)]
            after = None
            room = limit - len(found)
            found += [(name, self._keys.lock(name)) for name in names[:room]]
            if len(names) > room:  # more than this step may return: read it again next time
                return self._page(found, f"{position}:{count}:{found[-1][0]}")
            position = int(following)
            if position == 0 or len(found) >= limit:
                break
            count = min(count * 2, MAX_SCAN_COUNT) if not batch else max(limit - len(found),
                                                                          MIN_SCAN_COUNT)
        return self._page(found, None if position == 0 else str(position))

    def _page(self, found: list[tuple[str, str]], next_cursor: str | None) -> LockPage:
        distinct = list(dict.fromkeys(found))  # SCAN may return a key twice
        records = sorted(self._read(distinct), key=lambda record: record.name)
        return LockPage(tuple(records), next_cursor)

    def delete(self, name: str) -> bool:
        key = self._keys.lock(name)
        with translate_errors():
            return bool(self._client.delete(key))


def _contains(rest: str, contains: str) -> bool:
    return not contains or ascii_lower(contains) in ascii_lower(rest)


def _parse_cursor(cursor: str | None, limit: int) -> tuple[int, int, str | None]:
    """(SCAN cursor, COUNT, last name returned) from a scan cursor; None starts anew."""
    count = max(limit, MIN_SCAN_COUNT)
    if cursor is None:
        return 0, count, None
    position, _, rest = cursor.partition(":")
    if not position.isdigit():
        raise ValueError(f"{cursor!r} is not a lock scan cursor; pass the next_cursor a scan "
                         "returned, or None to start again")
    if not rest:
        return int(position), count, None
    given, _, after = rest.partition(":")
    if not given.isdigit() or not after:
        raise ValueError(f"{cursor!r} is not a lock scan cursor; pass the next_cursor a scan "
                         "returned, or None to start again")
    return int(position), int(given), after
