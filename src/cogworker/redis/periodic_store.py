"""``broker.periodic`` on Redis: the original's cron keys and the slot claim.

Keys (under :attr:`KeySchema.periodic_prefix <cogworker.redis.keys.KeySchema>`, plain
``periodic:`` in the default namespace, as the Ruby original writes them): the published
schedule hash ``periodic:schedule`` (pjid -> JSON record), the disabled set
``periodic:disabled``, each entry's ``periodic:last_slot:<pjid>``, the per-slot claim lock
``periodic:lock:<pjid>:<slot>``, and the running lock ``periodic:running:<pjid>`` (a lock of
:class:`~cogworker.redis.lock_store.RedisLockStore` named
:func:`~cogworker.core.broker.running_lock_name`). The claim and its rollback are one Lua
step each (``periodic_claim.lua``, ``periodic_rollback.lua``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

import redis

from cogworker.core.broker import running_lock_name
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.payload import dumps
from cogworker.core.periodic_types import ClaimOutcome, ClaimResult, PeriodicEntry
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.lock_store import whole_seconds
from cogworker.redis.replies import as_text
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)

LUA_PACKAGE = "cogworker.redis"
UNTIL_EXECUTED = "until_executed"
BLOCKED = 2


def schedule_record(entry: PeriodicEntry) -> str:
    """The JSON published for one entry: cron, class, retry, unique, args, queue."""
    return dumps({"cron": entry.cron, "class": entry.job_name, "retry": entry.retry,
                  "unique": entry.unique, "args": entry.args, "queue": entry.queue})


def entry_from_record(raw: bytes | str) -> PeriodicEntry | None:
    """An entry back from its published JSON; None when the record is unreadable."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    cron, job = data.get("cron"), data.get("class")
    args = data.get("args", [])
    queue = data.get("queue") or "default"
    if not isinstance(cron, str) or not isinstance(job, str) or not isinstance(args, list):
        return None
    unique = data.get("unique")
    return PeriodicEntry(cron=cron, job_name=job, args=args, retry=data.get("retry", 0),
                         unique=unique if isinstance(unique, str) else None,
                         queue=queue if isinstance(queue, str) else "default")


class RedisPeriodicStore:
    """:class:`cogworker.core.broker.PeriodicStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    # the published schedule ------------------------------------------------------------
    def publish(self, entries: Sequence[PeriodicEntry], *, replace: bool) -> None:
        """HSET every entry; with ``replace`` DEL the hash first (one MULTI)."""
        key = self._keys.periodic_schedule
        pipe = self._client.pipeline(transaction=True)
        if replace:
            pipe.delete(key)
        for entry in entries:
            pipe.hset(key, entry.pjid, schedule_record(entry))
        with translate_errors():
            pipe.execute()

    def schedule(self) -> dict[str, PeriodicEntry]:
        with translate_errors():
            rows: dict[Any, Any] = self._client.hgetall(self._keys.periodic_schedule)
        entries: dict[str, PeriodicEntry] = {}
        for field, raw in rows.items():
            entry = entry_from_record(raw)
            if entry is None:
                logger.warning("unreadable row %s in %s: %.200r", as_text(field),
                               self._keys.periodic_schedule, raw)
                continue
            entries[as_text(field)] = entry
        return entries

    # enabling --------------------------------------------------------------------------
    def disabled(self) -> frozenset[str]:
        with translate_errors():
            members: set[Any] = self._client.smembers(self._keys.periodic_disabled)
        return frozenset(as_text(member) for member in members)

    def is_disabled(self, pjid: str) -> bool:
        try:
            with translate_errors():
                return bool(self._client.sismember(self._keys.periodic_disabled, pjid))
        except BrokerUnavailableError:
            raise
        except Exception:
            logger.exception("cannot read %s; treating entry %s as enabled",
                             self._keys.periodic_disabled, pjid)
            return False

    def set_disabled(self, pjid: str, disabled: bool) -> bool:
        key = self._keys.periodic_disabled
        with translate_errors():
            if disabled:
                return bool(self._client.sadd(key, pjid))
            return bool(self._client.srem(key, pjid))

    # slots -----------------------------------------------------------------------------
    def last_slots(self, pjids: Iterable[str]) -> dict[str, int | None]:
        ids = list(pjids)
        if not ids:
            return {}
        with translate_errors():
            values = self._client.mget([self._keys.periodic_last_slot(pjid) for pjid in ids])
        last: dict[str, int | None] = {}
        for pjid, value in zip(ids, values, strict=True):
            shown = None if value is None else as_text(value)
            last[pjid] = int(shown) if shown is not None and shown.lstrip("-").isdigit() else None
        return last

    def prime_last_slot(self, pjid: str, slot: int) -> bool:
        with translate_errors():
            return bool(self._client.set(self._keys.periodic_last_slot(pjid), slot, nx=True))

    def claim_slot(self, pjid: str, slot: int, jid: str, *, until_executed: bool,
                   slot_lock_ttl: float, running_ttl: float) -> ClaimResult:
        keys = self._keys
        reply = self._scripts.run(
            LUA_PACKAGE, "periodic_claim",
            [keys.lock(running_lock_name(pjid)), keys.periodic_last_slot(pjid),
             keys.periodic_slot_lock(pjid, slot)],
            [slot, UNTIL_EXECUTED if until_executed else "", whole_seconds(slot_lock_ttl), jid,
             whole_seconds(running_ttl)],
        )
        if isinstance(reply, list):
            previous = as_text(reply[1]) if len(reply) > 1 else ""
            return ClaimResult(ClaimOutcome.WON, int(previous) if previous else None)
        if int(reply) == BLOCKED:
            return ClaimResult(ClaimOutcome.BLOCKED)
        return ClaimResult(ClaimOutcome.LOST)

    def rollback_claim(self, pjid: str, slot: int, previous_slot: int | None,
                       jid: str) -> bool:
        keys = self._keys
        reply = self._scripts.run(
            LUA_PACKAGE, "periodic_rollback",
            [keys.periodic_last_slot(pjid), keys.periodic_slot_lock(pjid, slot),
             keys.lock(running_lock_name(pjid))],
            [slot, "" if previous_slot is None else previous_slot, jid],
        )
        return bool(reply)
