"""``broker.extension(STATUS)`` on Redis: statuses in hashes per time bucket.

A record is written as field ``<jid>`` (its JSON) of the hash ``<ns>:status:<bucket>``,
where ``bucket`` is the write's time // :data:`BUCKET_SECONDS`; the hash expires
``ttl + BUCKET_SECONDS`` after its last write, and a record past its own ``expires_at``
reads as gone. So a worker writes a second's statuses with two commands (``HSET`` with
every jid, ``EXPIRE``) instead of two per job, and a read looks in the buckets of the last
``max_ttl`` seconds (``HGET`` each, one pipeline) and keeps the newest record.

The Ruby gem's ``status:<jid>`` hashes are not written: one key per job costs two commands
per job, more than the whole budget of the observability plugins.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import redis

from cogworker.core.broker.status import READ_LIMIT, StatusRecord
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text

BUCKET_SECONDS = 60
"""Width of one status hash, in seconds of write time."""
_RECORD_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
"""One encoder for every record (``json.dumps`` with options builds one per call)."""


class RedisStatusStore:
    """:class:`cogworker.core.broker.StatusStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema) -> None:
        self._client = client
        self._keys = keys

    def write(self, records: Sequence[StatusRecord]) -> None:
        if not records:
            return
        latest = {record.jid: record for record in records}
        written = max(record.updated_at for record in records)
        lives = max(record.expires_at for record in records) - written
        key = self._keys.status_bucket(int(written // BUCKET_SECONDS))
        mapping: dict[Any, Any] = {jid: _stored(record) for jid, record in latest.items()}
        pipe = self._client.pipeline(transaction=False)
        pipe.hset(key, mapping=mapping)
        pipe.expire(key, max(1, math.ceil(lives)) + BUCKET_SECONDS)
        with translate_errors():
            pipe.execute()

    def read(self, jids: Sequence[str], max_ttl: float, now: float) -> dict[str, StatusRecord]:
        wanted = list(dict.fromkeys(jids))
        if len(wanted) > READ_LIMIT:
            raise ValueError(f"read at most {READ_LIMIT} statuses at once, not {len(wanted)}")
        if not wanted:
            return {}
        newest = int(now // BUCKET_SECONDS) + 1  # a writer's clock may run a little ahead
        oldest = int((now - max_ttl) // BUCKET_SECONDS) - 1
        pipe = self._client.pipeline(transaction=False)
        buckets = range(newest, oldest - 1, -1)
        for bucket in buckets:
            pipe.hmget(self._keys.status_bucket(bucket), wanted)
        with translate_errors():
            replies: list[Any] = pipe.execute()
        found: dict[str, StatusRecord] = {}
        for values in replies:
            for jid, value in zip(wanted, values, strict=True):
                record = _parsed(value)
                if record is None or record.expires_at <= now:
                    continue
                if jid not in found or record.updated_at > found[jid].updated_at:
                    found[jid] = record
        return found


def _stored(record: StatusRecord) -> str:
    """The record's JSON without its empty fields (a status is kept per job: bytes count):
    :meth:`StatusRecord.to_dict`'s keys, in its order, read straight off the record."""
    data: dict[str, Any] = {"jid": record.jid, "state": record.state,
                            "updated_at": record.updated_at, "expires_at": record.expires_at}
    for name, value in (("class", record.class_name), ("queue", record.queue),
                        ("pct", record.pct), ("message", record.message),
                        ("error_class", record.error_class),
                        ("error_message", record.error_message)):
        if value is not None:
            data[name] = value
    if record.fields:
        data["fields"] = dict(record.fields)
    return _RECORD_JSON.encode(data)


def _parsed(value: bytes | str | None) -> StatusRecord | None:
    if value is None:
        return None
    try:
        data = json.loads(as_text(value))
    except ValueError:
        return None
    return StatusRecord.from_dict(data) if isinstance(data, dict) else None
