"""``broker.extension(BATCHES)`` on Redis: one hash and eight sets per batch.

Keys (``<ns>:batch:<bid>`` and ``<ns>:batch:<bid>:<part>``): the hash holds the spec
(``description``, ``created_at``, ``queue``, ``parent``...), the callback templates
(``cb:<kind>``, ``cbx:<kind>``) and the fired-flags (``<kind>_at``); the sets hold members
(``members``, ``unrun``, ``pending``, ``failed``, ``dead``) and what was seen of them
(``ran``, ``ok``, ``died``). ``<ns>:batches`` indexes bids by creation time,
``<ns>:batches:cancelled`` the cancelled ones. Every change is ``batch_update.lua`` (one
round trip, about twenty commands inside); a batch's keys expire ``ttl`` after it
completed or was cancelled.
In cluster mode every key shares the namespace's hash tag, so the script may push the
callback onto its queue in the same step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import redis

from cogworker.core.broker.batches import (
    BatchCounts,
    BatchOutcome,
    BatchRecord,
    BatchSpec,
    BatchUpdate,
    CallbackKind,
    MemberState,
    SettleItem,
    record_from_fields,
    spec_fields,
)
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text, text, wire
from cogworker.redis.scripts import NOSCRIPT_ROUNDS, Scripts

PACKAGE = "cogworker.redis"
PARTS = ("members", "unrun", "pending", "failed", "dead", "ran", "ok", "died")
OPEN_TTL = 7 * 24 * 3600
"""Seconds outcomes of a batch that was never sealed are kept (its block crashed)."""
SCAN_STEP = 500
_STATE_PART = {"all": "members", "pending": "pending", "succeeded": "ok", "failed": "failed",
               "dead": "dead"}


def update_of(bid: str, reply: Sequence[Any]) -> BatchUpdate:
    fired = tuple(cast(CallbackKind, k) for k in as_text(reply[0]).split(",") if k)
    finished = frozenset(cast(CallbackKind, k) for k in as_text(reply[1]).split(",") if k)
    return BatchUpdate(bid=bid, fired=fired, finished=finished, sealed=bool(int(reply[2])),
                       cancelled=bool(int(reply[3])), parent=as_text(reply[4]) or None,
                       parent_callback_queue=as_text(reply[5]) or None)


class RedisBatchStore:
    """:class:`cogworker.core.broker.BatchStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def _parts(self, bid: str) -> list[str]:
        return [self._keys.batch_part(bid, part) for part in PARTS]

    def _call(self, bid: str, callback_queue: str, now: float, ttl: float,
              args: Sequence[str | float | int]) -> tuple[list[str], list[str | float | int]]:
        """The keys and arguments of one ``batch_update.lua`` call."""
        parts = self._parts(bid)
        keys = [self._keys.batch(bid), *parts[:7], self._keys.queues,
                self._keys.queue(callback_queue), self._keys.batches, parts[7]]
        head: list[str | float | int] = [args[0], bid, repr(now), int(max(ttl, 1)), OPEN_TTL,
                                         self._keys.wakeup, callback_queue]
        return keys, [*head, *args[1:]]

    def _update(self, bid: str, callback_queue: str, now: float, ttl: float,
                args: Sequence[str | float | int]) -> BatchUpdate:
        keys, argv = self._call(bid, callback_queue, now, ttl, args)
        return update_of(bid, self._scripts.run(PACKAGE, "batch_update", keys, argv))

    def register(self, bid: str, members: Sequence[str], now: float, ttl: float,
                 spec: BatchSpec | None = None, callback_queue: str = "default"
                 ) -> BatchUpdate:
        fields = spec_fields(spec) if spec is not None else []
        queue = spec.callback_queue if spec is not None else callback_queue
        return self._update(bid, queue, now, ttl,
                            ["register", len(fields) // 2, *fields, *members])

    def settle(self, bid: str, member: str, outcome: BatchOutcome, now: float, ttl: float,
               callback_queue: str = "default") -> BatchUpdate:
        return self._update(bid, callback_queue, now, ttl, ["settle", member, outcome])

    def settle_many(self, items: Sequence[SettleItem], now: float, ttl: float
                    ) -> list[BatchUpdate]:
        if not items:
            return []
        script = self._scripts.get(PACKAGE, "batch_update")
        with translate_errors():
            for _ in range(NOSCRIPT_ROUNDS - 1):
                try:
                    replies = self._settle_pipeline(script.sha, items, now, ttl).execute()
                    break
                except redis.exceptions.NoScriptError:  # a restarted or flushed Redis
                    self._client.script_load(script.script)
            else:  # flushed again after each load (see NOSCRIPT_ROUNDS): the last round
                replies = self._settle_pipeline(script.sha, items, now, ttl).execute()
        return [update_of(item.bid, reply) for item, reply in zip(items, replies, strict=True)]

    def _settle_pipeline(self, sha: str, items: Sequence[SettleItem], now: float,
                         ttl: float) -> Any:
        """EVALSHA of each item, without redis-py's per-pipeline SCRIPT EXISTS check (a
        round trip): the settle is idempotent, so the whole pipeline may run again."""
        pipe = self._client.pipeline(transaction=False)
        for item in items:
            keys, argv = self._call(item.bid, item.callback_queue, now, ttl,
                                    ["settle", item.member, item.outcome])
            pipe.evalsha(sha, len(keys), *keys, *argv)
        return pipe

    def get(self, bid: str) -> BatchRecord | None:
        return self._records([bid]).get(bid)

    def _records(self, bids: Sequence[str]) -> dict[str, BatchRecord]:
        pipe = self._client.pipeline(transaction=False)
        for bid in bids:
            pipe.hgetall(self._keys.batch(bid))
            for part in ("members", "pending", "failed", "dead"):
                pipe.scard(self._keys.batch_part(bid, part))
        with translate_errors():
            replies: list[Any] = pipe.execute()
        found: dict[str, BatchRecord] = {}
        for index, bid in enumerate(bids):
            raw, total, pending, failed, dead = replies[index * 5 : index * 5 + 5]
            fields = {as_text(k): as_text(v) for k, v in raw.items()}
            if "sealed" not in fields:
                continue
            counts = BatchCounts(total=total, pending=pending, succeeded=total - pending,
                                 failed=failed, dead=dead)
            found[bid] = record_from_fields(bid, fields, counts)
        return found

    def members(self, bid: str, state: MemberState, start: int, count: int
                ) -> tuple[list[str], int]:
        key = self._keys.batch_part(bid, _STATE_PART[state])
        with translate_errors():
            everyone = sorted(as_text(m) for m in cast(Any, self._client.smembers(key)))
        return everyone[start : start + count], len(everyone)

    def page(self, start: int, count: int) -> tuple[list[BatchRecord], int]:
        with translate_errors():
            bids = [as_text(b) for b in cast(Any, self._client.zrevrange(
                self._keys.batches, start, start + count - 1))]
            total = int(cast(Any, self._client.zcard(self._keys.batches)))
        records = self._records(bids) if bids else {}
        gone = [bid for bid in bids if bid not in records]
        if gone:
            with translate_errors():
                self._client.zrem(self._keys.batches, *gone)
        return [records[bid] for bid in bids if bid in records], total - len(gone)

    def cancel(self, bid: str, now: float, ttl: float) -> bool:
        keys = [self._keys.batch(bid), self._keys.batches_cancelled, *self._parts(bid)]
        reply = self._scripts.run(PACKAGE, "batch_cancel", keys, [bid, repr(now),
                                                                 int(max(ttl, 1))])
        return bool(int(reply))

    def delete_waiting(self, bid: str, queues: Sequence[str]) -> int:
        needle = f'"bid":{json.dumps(bid)}'
        deleted = 0
        for name in ("schedule", "retry"):
            key = self._keys.sorted_set(name)
            with translate_errors():
                for raw, _score in self._client.zscan_iter(key, match=f"*{needle}*",
                                                           count=SCAN_STEP):
                    deleted += int(cast(Any, self._client.zrem(key, raw)))
        for queue in queues:
            deleted += self._delete_from_queue(self._keys.queue(queue), needle)
        return deleted

    def _delete_from_queue(self, key: str, needle: str) -> int:
        deleted, start = 0, 0
        while True:
            with translate_errors():
                chunk = cast(Any, self._client.lrange(key, start, start + SCAN_STEP - 1))
            if not chunk:
                return deleted
            mine = [text(raw) for raw in chunk if needle in text(raw)]
            for raw in mine:
                with translate_errors():
                    deleted += int(cast(Any, self._client.lrem(key, 1, cast(Any, wire(raw)))))
            start += SCAN_STEP - len(mine)

    def cancelled_since(self, since: float) -> set[str]:
        with translate_errors():
            bids = cast(Any, self._client.zrangebyscore(self._keys.batches_cancelled,
                                                        repr(since), "+inf"))
        return {as_text(b) for b in bids}

