"""``broker.processes`` on Redis: presence hashes, running work, remote control.

A live process is a member of ``<ns>:processes`` whose presence hash
``<ns>:process:<identity>`` (``info`` JSON, ``busy``, ``quiet``) still exists; its running
work is the hash ``<ns>:workers:<identity>`` (thread id -> JSON ``{queue, payload,
run_at}``, the original's layout); a process that holds jobs is stamped in
``<ns>:last_beat`` on Redis's clock. Remote control is the pub/sub channel
``<ns>:signal:<identity>``. Beats and clean removal are
:class:`~cogworker.redis.heartbeat_store.HeartbeatStore`'s.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import redis

from cogworker.core.broker import SIGNALS, ProcessRecord, RunningJob, Subscription, WorkRecord
from cogworker.core.payload import dumps
from cogworker.redis.errors import translate_errors
from cogworker.redis.heartbeat_store import HeartbeatStore
from cogworker.redis.keys import KeySchema
from cogworker.redis.lock_store import whole_seconds
from cogworker.redis.pubsub import RedisSubscription
from cogworker.redis.replies import as_text
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)


def work_entry(work: WorkRecord) -> str:
    """A running-work record as the workers hash stores it (the original's JSON)."""
    return dumps({"queue": work.queue, "payload": dict(work.payload),
                  "run_at": int(work.run_at)})


def work_from_entry(raw: str) -> WorkRecord | None:
    """A workers-hash entry back as a record; None when it cannot be read."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    job = entry.get("payload")
    if isinstance(job, str):  # tolerate writers that stored the payload as a JSON string
        try:
            job = json.loads(job)
        except ValueError:
            return None
    run_at = entry.get("run_at")
    if (not isinstance(job, dict) or isinstance(run_at, bool)
            or not isinstance(run_at, (int, float))):
        return None
    queue = entry.get("queue")
    return WorkRecord(str(queue) if queue is not None else "", job, float(run_at))


def _parse_info(raw: bytes | str | None) -> dict[str, Any]:
    try:
        info = json.loads(as_text(raw)) if raw is not None else {}
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def _record(identity: str, fields: Mapping[Any, Any], pttl: object,
            beat: bytes | str | None) -> ProcessRecord:
    decoded = {as_text(name): value for name, value in fields.items()}
    try:
        busy = int(as_text(decoded.get("busy", b"0")))
    except ValueError:
        busy = 0
    quiet = as_text(decoded.get("quiet", b"false")) == "true"
    last_beat = _number(beat)
    expires_in = pttl / 1000 if isinstance(pttl, int) and pttl >= 0 else None
    return ProcessRecord(identity, _parse_info(decoded.get("info")), busy, quiet, last_beat,
                         expires_in)


def _number(value: bytes | str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(as_text(value))
    except ValueError:
        return None


class RedisProcessRegistry:
    """:class:`cogworker.core.broker.ProcessRegistry` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._heartbeats = HeartbeatStore(client, keys, scripts)

    # this process ----------------------------------------------------------------------
    def beat(self, identity: str, info: Mapping[str, Any], busy: int, quiet: bool,
             queues: Sequence[str], ttl: float, holds_jobs: bool) -> None:
        self._heartbeats.beat(identity, info=info, busy=busy, quiet=quiet, queues=queues,
                              ttl=ttl, holds_jobs=holds_jobs)

    def remove(self, identity: str) -> None:
        self._heartbeats.remove(identity)

    def set_work(self, identity: str, tid: str, work: WorkRecord) -> None:
        with translate_errors():
            self._client.hset(self._keys.workers(identity), tid, work_entry(work))

    def clear_work(self, identity: str, tid: str) -> None:
        with translate_errors():
            self._client.hdel(self._keys.workers(identity), tid)

    def replace_work(self, identity: str, works: Mapping[str, WorkRecord], ttl: float) -> None:
        key = self._keys.workers(identity)
        pipe = self._client.pipeline(transaction=True)
        pipe.delete(key)
        if works:
            pipe.hset(key, mapping={tid: work_entry(work) for tid, work in works.items()})
            pipe.expire(key, whole_seconds(ttl))
        with translate_errors():
            pipe.execute()

    # the fleet -------------------------------------------------------------------------
    def live(self) -> list[ProcessRecord]:
        """One pipeline for the presence hashes, their TTLs and the last beats; members
        whose presence is gone are unregistered on the way."""
        keys = self._keys
        with translate_errors():
            members: set[Any] = self._client.smembers(keys.processes)
        identities = sorted(as_text(member) for member in members)
        if not identities:
            return []
        pipe = self._client.pipeline(transaction=False)
        for identity in identities:
            pipe.hgetall(keys.process(identity))
            pipe.pttl(keys.process(identity))
        pipe.hmget(keys.last_beat, identities)
        with translate_errors():
            *replies, beats = pipe.execute()
            gone = [identity for index, identity in enumerate(identities)
                    if not replies[2 * index]]
            if gone:
                self._client.srem(keys.processes, *gone)
        return [_record(identity, replies[2 * index], replies[2 * index + 1], beats[index])
                for index, identity in enumerate(identities) if replies[2 * index]]

    def get(self, identity: str) -> ProcessRecord | None:
        keys = self._keys
        pipe = self._client.pipeline(transaction=False)
        pipe.hgetall(keys.process(identity))
        pipe.pttl(keys.process(identity))
        pipe.hget(keys.last_beat, identity)
        with translate_errors():
            fields, pttl, beat = pipe.execute()
        return _record(identity, fields, pttl, beat) if fields else None

    def is_dead(self, identity: str, threshold: float) -> bool:
        keys = self._keys
        pipe = self._client.pipeline(transaction=False)
        pipe.exists(keys.process(identity))
        pipe.hget(keys.last_beat, identity)
        pipe.time()
        with translate_errors():
            present, beat, (seconds, micros) = pipe.execute()
        if present:
            return False
        last = _number(beat)
        now = int(seconds) + int(micros) / 1_000_000
        return last is None or now - last > threshold

    def work(self, identity: str | None = None) -> list[RunningJob]:
        identities = [identity] if identity is not None else [
            record.identity for record in self.live()]
        if not identities:
            return []
        pipe = self._client.pipeline(transaction=False)
        for name in identities:
            pipe.hgetall(self._keys.workers(name))
        with translate_errors():
            replies: list[Any] = pipe.execute()
        running = []
        for name, fields in zip(identities, replies, strict=True):
            for tid, raw in sorted((as_text(t), as_text(r)) for t, r in fields.items()):
                record = work_from_entry(raw)
                if record is None:
                    logger.warning("unreadable entry %s in %s: %.200s", tid,
                                   self._keys.workers(name), json.dumps(raw))
                    continue
                running.append(RunningJob(name, tid, record))
        return running

    # remote control --------------------------------------------------------------------
    def signal(self, identity: str, message: str) -> int:
        if message not in SIGNALS:
            raise ValueError(f"{message!r} is not a signal a worker obeys; send one of "
                             f"{', '.join(SIGNALS)}")
        with translate_errors():
            return int(self._client.publish(self._keys.signal(identity), message))

    def subscribe_signals(self, identity: str) -> AbstractContextManager[Subscription]:
        return RedisSubscription.opened(self._client, self._keys.signal(identity))
