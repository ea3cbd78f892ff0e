"""Keys of the wrong Redis type, quarantined as soon as an operation meets them (KeyGuard).

A queue key that holds a string (a hand-made ``SET``, a foreign tool sharing the namespace)
makes every fetch that tries it fail with ``WRONGTYPE``: without a guard, a worker would
back off and log an error once a second, slowing its healthy queues too. When a fetch fails
with ``WRONGTYPE``, the broker hands the keys it touched to :class:`KeyGuard`,
which reads their types in one round trip and moves each key of another type (a missing key
is fine) aside with ``quarantine_key.lua``: renamed, only if it still has the type seen, to
``<ns>:quarantine:<key>:<epoch ms>:<8 hex>`` with a 30-day TTL, and logged once as an error.
The newest :data:`KEPT_COPIES` copies of a key are kept. The fetch then runs again at once,
on a fresh empty key.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

import redis

from cogworker.core.errors import BrokerError
from cogworker.redis.errors import translate_errors
from cogworker.redis.globs import glob_escape
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import text
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)

PACKAGE = "cogworker.redis"
QUARANTINE_TTL = 30 * 86_400
KEPT_COPIES = 5

T = TypeVar("T")


def is_wrong_type(exc: BaseException) -> bool:
    """Whether a broker error is Redis's ``WRONGTYPE`` (also from inside a script)."""
    return isinstance(exc, BrokerError) and "WRONGTYPE" in str(exc)


class KeyGuard:
    """Quarantines keys of the wrong type for one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def guarded(self, action: Callable[[], T], expected: Mapping[str, str]) -> T:
        """``action()``; when it fails with ``WRONGTYPE`` and a key of ``expected`` was of
        another type, that key is quarantined and ``action()`` runs once more. Any other
        error (or a ``WRONGTYPE`` no key of ``expected`` explains) propagates."""
        try:
            return action()
        except BrokerError as exc:
            if not is_wrong_type(exc) or not self.quarantine_wrong_types(expected):
                raise
        return action()

    def quarantine_wrong_types(self, expected: Mapping[str, str]) -> list[str]:
        """Quarantine every key of ``expected`` (key → the type it must have, e.g.
        ``list``) that holds another type; returns the keys moved. Redis errors propagate."""
        keys = list(expected)
        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.type(key)
        with translate_errors():
            found = [text(kind) for kind in pipe.execute()]
        moved = []
        for key, kind in zip(keys, found, strict=True):
            if kind not in (expected[key], "none") and self._quarantine(key, kind,
                                                                        expected[key]):
                moved.append(key)
        return moved

    def _quarantine(self, key: str, kind: str, wanted: str) -> bool:
        stamp = int(time.time() * 1000)
        copy = self._keys.quarantine(key, stamp, os.urandom(4).hex())
        moved = bool(self._scripts.run(PACKAGE, "quarantine_key", keys=[key, copy],
                                       args=[kind, QUARANTINE_TTL]))
        if moved:
            logger.error("%s held a %s, not a %s: moved to %s (kept %d days); a fresh, empty "
                         "key takes its place", key, kind, wanted, copy,
                         QUARANTINE_TTL // 86_400)
            self._drop_old_copies(key)
        return moved

    def _drop_old_copies(self, key: str) -> None:
        """Keep the newest copies of ``key`` only (best-effort: the TTL ends the others)."""
        prefix = self._keys.quarantine(key, 0, "x").removesuffix(":0:x")
        exact = re.compile(re.escape(prefix) + r":(\d+):[0-9a-f]{8}")
        try:
            with translate_errors():
                found = [text(name) for name in self._client.scan_iter(
                    match=glob_escape(prefix) + ":*", count=1000)]
                copies = sorted((int(match.group(1)), name) for name in found
                                if (match := exact.fullmatch(name)))
                stale = [name for _, name in copies[:-KEPT_COPIES]]
                if stale:
                    self._client.delete(*stale)
        except BrokerError as exc:
            logger.warning("could not prune old quarantined copies of %s: %s", key, exc)
