"""What the fetchers and orphan recovery share: the backend they need, raw text, requeue keys.

Lua cannot build key names (every key a script touches must be passed in ``KEYS``), so the
keys a requeue touches are computed here, on the client side, from the raw payload:

* the target queue: the payload's ``queue`` when it is a non-empty string, else ``default``
  (where the processor buries an unreadable payload as unparseable);
* the periodic running lock, only for ``periodic_until_executed`` runs with string
  ``periodic_pjid`` and ``jid``: the requeue re-takes it in the same atomic step;
* the orphan counter: ``orphanings:<jid>``, or ``orphanings:raw-<sha1>`` for a payload
  without a jid, so that even such a payload cannot kill processes forever.

Raw payloads travel as ``str`` decoded with ``surrogateescape``: bytes that are not UTF-8
survive the round trip and are sent back byte for byte by :func:`wire`.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from cogworker.core.payload import DEFAULT_QUEUE
from cogworker.redis.keys import KeySchema
from cogworker.redis.scripts import Scripts

ORPHAN_COUNTER_TTL = 7 * 24 * 3600
"""Seconds an orphan counter lives after its last bump (the original's 7 days)."""


class WakeupSubscription(Protocol):
    """A live subscription to the wake-up channel (messages are queue names)."""

    def get(self, timeout: float) -> str | None: ...

    def close(self) -> None: ...


class RedisParts(Protocol):
    """A Redis client with its key schema and scripts; ``RedisBroker`` is one."""

    @property
    def client(self) -> redis.Redis: ...

    @property
    def keys(self) -> KeySchema: ...

    @property
    def scripts(self) -> Scripts: ...


class RedisBackend(RedisParts, Protocol):
    """What fetchers and recovery need of a Redis broker; ``RedisBroker`` is one."""

    def paused_queues(self) -> set[str]:
        """Names of paused queues, read fresh on every call."""
        ...

    def server_version(self) -> tuple[int, ...]:
        """The server version, e.g. (7, 2, 4); raises ``BrokerError`` when unreadable."""
        ...

    def subscribe_wakeups(self) -> AbstractContextManager[WakeupSubscription]:
        """Subscribe to the wake-up channel on a dedicated connection."""
        ...


def text(value: bytes | str) -> str:
    """A Redis reply as ``str``; bytes that are not UTF-8 are kept (``surrogateescape``)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def wire(raw: str) -> bytes:
    """The exact bytes of a raw payload read with :func:`text`, to match it in Redis."""
    return raw.encode("utf-8", "surrogateescape")


def parse_job(raw: str) -> dict[str, Any] | None:
    """The payload as a dict, or None when it is not a JSON object.

    Any failure of the parser means "not a job" (a ``RecursionError`` on an entry nested
    100,000 levels deep included): recovery must get past every entry, whatever it holds.
    """
    try:
        job = json.loads(raw)
    except Exception:
        return None
    return job if isinstance(job, dict) else None


def counter_id(raw: str, job: dict[str, Any] | None) -> str:
    """The id an orphan counter is kept under: the jid, or a digest of the raw bytes."""
    jid = job.get("jid") if job is not None else None
    if isinstance(jid, str) and jid:
        return jid
    return "raw-" + hashlib.sha1(wire(raw)).hexdigest()


@dataclass(frozen=True, slots=True)
class RequeueTarget:
    """The keys a Lua requeue of one raw payload touches."""

    queue: str
    queue_key: str
    counter_key: str
    jid: str
    lock_key: str | None

    def lock_keys(self) -> list[str]:
        """``[lock_key]`` for an ``until_executed`` cron run, else ``[]`` (an optional KEY)."""
        return [] if self.lock_key is None else [self.lock_key]


def requeue_target(keys: KeySchema, raw: str) -> RequeueTarget:
    """Where ``raw`` goes when it is requeued, and which keys that touches; never raises
    (whatever ``raw`` holds, it is requeued as opaque bytes onto ``default``)."""
    try:
        return _target_of(keys, raw, parse_job(raw))
    except Exception:
        return _target_of(keys, raw, None)


def _target_of(keys: KeySchema, raw: str, job: dict[str, Any] | None) -> RequeueTarget:
    queue = job.get("queue") if job is not None else None
    if not isinstance(queue, str) or not queue:
        queue = DEFAULT_QUEUE
    jid = job.get("jid") if job is not None else None
    lock_key = None
    if job is not None and job.get("periodic_until_executed") is True:
        pjid = job.get("periodic_pjid")
        if isinstance(pjid, str) and isinstance(jid, str):
            lock_key = keys.periodic_running(pjid)
    return RequeueTarget(
        queue=queue,
        queue_key=keys.queue(queue),
        counter_key=keys.orphanings(counter_id(raw, job)),
        jid=jid if isinstance(jid, str) else "",
        lock_key=lock_key,
    )


def counter_key(keys: KeySchema, raw: str) -> str:
    """The orphan counter key of ``raw`` (see :func:`counter_id`)."""
    return requeue_target(keys, raw).counter_key
