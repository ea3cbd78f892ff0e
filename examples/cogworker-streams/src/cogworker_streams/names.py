"""Key names, the consumer group, and the small conversions every module of the strategy
shares.

Every key is built from the broker's :class:`~cogworker.redis.keys.KeySchema`: the
strategy's own keys (a stream per queue, the registry of streams) under ``keys.prefix``, so
namespaces never meet and, in cluster mode, the hash tag puts them in the namespace's slot
with every other key its scripts touch. The keys it shares with the broker (queues, the
paused set, presence, last beats, orphan counters, locks) are the broker's own names, as
``docs/reference/redis-keys.md`` documents them.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from cogworker.core.broker import Broker, LockClaim
from cogworker.redis import RedisAccess
from cogworker.redis.keys import KeySchema

PACKAGE = "cogworker_streams"
"""Where ``scripts.run`` finds the ``lua/`` folder."""
GROUP = "cogworker"
"""The one consumer group of every stream; the consumers are process identities."""
FIELD = "job"
"""The stream entry field that holds the raw payload."""
DEFAULT_QUEUE = "default"


class RedisBackedBroker(Broker, RedisAccess, Protocol):
    """The broker this strategy runs on: the contract's facets, and the Redis surface."""


@dataclass(frozen=True, slots=True)
class StreamKeys:
    """The strategy's key names, and the broker's ones it touches, for one namespace."""

    schema: KeySchema

    def stream(self, queue: str) -> str:
        """The stream the jobs of ``queue`` wait in while a process holds them."""
        return f"{self.schema.prefix}:stream:{queue}"

    @property
    def stream_prefix(self) -> str:
        return f"{self.schema.prefix}:stream:"

    @property
    def registry(self) -> str:
        """The set of queue names that have a stream (what orphan recovery walks)."""
        return f"{self.schema.prefix}:streams"

    def counter(self, raw: str) -> str:
        """The job's orphan counter: the broker's ``orphanings:<jid>`` (a digest of the
        bytes for a payload without a jid), so a fleet mixing strategies counts together."""
        return self.schema.orphanings(counter_id(raw))

    def lock(self, claim: LockClaim) -> str:
        return self.schema.lock(claim.name)


@dataclass(frozen=True, slots=True)
class Held:
    """One stream entry a consumer was handed: its queue, entry id and raw payload (None
    when the entry's content was deleted by hand while it was pending)."""

    queue: str
    entry_id: str
    raw: str | None


class KeyList:
    """Keys for a script's ``KEYS``, each once, referred to by 1-based position."""

    def __init__(self, fixed: Sequence[str] = ()) -> None:
        self._positions: dict[str, int] = {}
        for name in fixed:
            self.position(name)

    def position(self, name: str) -> int:
        found = self._positions.get(name)
        if found is None:
            found = self._positions[name] = len(self._positions) + 1
        return found

    @property
    def names(self) -> list[str]:
        return list(self._positions)  # dicts keep insertion order: position order


def text(value: bytes | str) -> str:
    """A Redis reply as ``str``; bytes that are not UTF-8 are kept (``surrogateescape``)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def wire(raw: str) -> bytes:
    """The exact bytes of a raw read with :func:`text`."""
    return raw.encode("utf-8", "surrogateescape")


def entry_order(entry_id: str) -> tuple[int, int]:
    """Stream ids (``<ms>-<seq>``) in the order Redis gave them out."""
    milliseconds, _, sequence = entry_id.partition("-")
    return int(milliseconds), int(sequence or 0)


def parse_job(raw: str) -> dict[str, object] | None:
    """The payload as a dict, or None when it is not a JSON object (any parser failure,
    deep nesting included, means "not a job": recovery must get past every entry)."""
    try:
        job = json.loads(raw)
    except Exception:
        return None
    return job if isinstance(job, dict) else None


def counter_id(raw: str) -> str:
    """The jid, or ``raw-<sha1 of the bytes>`` for a payload without one."""
    job = parse_job(raw)
    jid = job.get("jid") if job is not None else None
    if isinstance(jid, str) and jid:
        return jid
    return "raw-" + hashlib.sha1(wire(raw)).hexdigest()


def lock_seconds(claim: LockClaim) -> int:
    """A lock TTL as Redis's ``SET EX`` takes it: whole seconds, at least 1."""
    return max(1, math.ceil(claim.ttl))
