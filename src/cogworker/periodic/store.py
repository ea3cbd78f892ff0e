"""The cron keys on Redis that are not locks: the published schedule, disabled entries and
the last slots (read for display, primed by the ticker when catch-up is off).

Key names come from :class:`cogworker.redis.keys.KeySchema`; every call is translated at
:func:`cogworker.redis.errors.translate_errors`, so callers see ``BrokerUnavailableError``
(try later) or ``BrokerError``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.payload import dumps
from cogworker.core.periodic_types import PeriodicEntry
from cogworker.redis.errors import translate_errors
from cogworker.redis.replies import as_text

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger(__name__)


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


def publish_schedule(app: App, entries: Sequence[PeriodicEntry], *, replace: bool) -> None:
    """HSET every entry into ``periodic:schedule``; with ``replace`` DEL it first (one MULTI)."""
    key = app.keys.periodic_schedule
    pipe = app.broker.client.pipeline(transaction=True)
    if replace:
        pipe.delete(key)
    for entry in entries:
        pipe.hset(key, entry.pjid, schedule_record(entry))
    with translate_errors():
        pipe.execute()


def read_schedule(app: App) -> dict[str, PeriodicEntry]:
    """The published schedule, by pjid; unreadable rows are logged and left out."""
    with translate_errors():
        rows: dict[Any, Any] = app.broker.client.hgetall(app.keys.periodic_schedule)
    entries: dict[str, PeriodicEntry] = {}
    for field, raw in rows.items():
        entry = entry_from_record(raw)
        if entry is None:
            logger.warning("unreadable row %s in %s: %.200r", as_text(field),
                           app.keys.periodic_schedule, raw)
            continue
        entries[as_text(field)] = entry
    return entries


def is_disabled(app: App, pjid: str) -> bool:
    """SISMEMBER ``periodic:disabled``; an unreadable set counts as enabled (logged)."""
    try:
        with translate_errors():
            return bool(app.broker.client.sismember(app.keys.periodic_disabled, pjid))
    except BrokerUnavailableError:
        raise
    except Exception:
        logger.exception("cannot read %s; treating entry %s as enabled",
                         app.keys.periodic_disabled, pjid)
        return False


def disabled_set(app: App) -> set[str]:
    with translate_errors():
        members: set[Any] = app.broker.client.smembers(app.keys.periodic_disabled)
    return {as_text(member) for member in members}


def set_disabled(app: App, pjid: str, disabled: bool) -> bool:
    """SADD or SREM ``pjid``; True when that changed something."""
    client = app.broker.client
    with translate_errors():
        if disabled:
            return bool(client.sadd(app.keys.periodic_disabled, pjid))
        return bool(client.srem(app.keys.periodic_disabled, pjid))


def prime_last_slot(app: App, pjid: str, slot: int) -> bool:
    """``SET last_slot slot NX``: True when this created the key (the entry never ran)."""
    with translate_errors():
        return bool(app.broker.client.set(app.keys.periodic_last_slot(pjid), slot, nx=True))


def last_slots_and_owners(
    app: App, pjids: Iterable[str]
) -> tuple[dict[str, int | None], dict[str, str | None]]:
    """Each entry's last claimed slot and running-lock owner (two MGETs)."""
    ids = list(pjids)
    if not ids:
        return {}, {}
    client = app.broker.client
    with translate_errors():
        slots = client.mget([app.keys.periodic_last_slot(pjid) for pjid in ids])
        owners = client.mget([app.keys.periodic_running(pjid) for pjid in ids])
    last: dict[str, int | None] = {}
    for pjid, value in zip(ids, slots, strict=True):
        text = None if value is None else as_text(value)
        last[pjid] = int(text) if text is not None and text.lstrip("-").isdigit() else None
    return last, {pjid: None if value is None else as_text(value)
                  for pjid, value in zip(ids, owners, strict=True)}
