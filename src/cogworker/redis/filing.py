"""Filing what other processes left behind: repeat orphans and unsettled failures.

Both lists are worked head first, one entry per atomic step: a script re-checks that the
head is still the entry the client prepared the record for, writes the record into its
sorted set, THEN pops the entry. Records are built here, on the client side (Lua never
re-encodes a payload).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from typing import cast

import redis

from cogworker.core.broker import SORTED_SET_NAMES, SortedSetName
from cogworker.core.broker.burial import orphan_dead_record
from cogworker.core.errors import BrokerError
from cogworker.core.payload import dumps
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import text, wire
from cogworker.redis.requeue_keys import counter_key
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)

PACKAGE = "cogworker.redis"
QUARANTINE_TTL = 30 * 86_400

Step = Callable[[str], "bytes | None"]
"""Handles the raw at a list's head; returns the head after it (None when empty)."""


def walk_list(client: redis.Redis, key: str, step: Step) -> None:
    """Call ``step`` on the head of ``key`` until the list is empty, at most once per
    entry it held at the start (an entry ``step`` could not move does not loop forever)."""
    pipe = client.pipeline(transaction=False)
    pipe.llen(key)
    pipe.lindex(key, 0)
    with translate_errors():
        length, head = pipe.execute()
    for _ in range(int(length)):
        if head is None:
            return
        head = step(text(head))


def bury_repeat_orphans(client: redis.Redis, keys: KeySchema, scripts: Scripts, now: float,
                        *, max_orphanings: int = 3) -> list[str]:
    """File every job parked on ``repeat_orphans`` into dead (error class
    ``cogworker.JobOrphanedError``), counting each as failed. Returns the records as
    stored in dead, so the caller can run death hooks and release locks. A Redis error
    ends the walk (logged); what was filed before it is returned."""
    stored: list[str] = []

    def bury(raw: str) -> bytes | None:
        record = orphan_dead_record(raw, now, max_orphanings)
        filed, head = scripts.run(
            PACKAGE, "recovery_bury_orphan",
            keys=[keys.repeat_orphans, keys.dead, counter_key(keys, raw), keys.stats_failed],
            args=[wire(raw), now, wire(record)],
        )
        if filed:
            stored.append(record)
            logger.error("moved a job to dead: orphaned more than %d times (%.200s)",
                         max_orphanings, raw)
        return head  # type: ignore[no-any-return]

    _walk_logged(client, keys.repeat_orphans, bury)
    return stored


def unsettled_record(keys: KeySchema, set_name: str, score: float, payload: str) -> str:
    """The JSON record a hand-over leaves (``held.park``, ``held.hand_over``): ``{set,
    score, payload}`` with the full sorted-set key, as the Ruby original writes it."""
    return dumps({"set": keys.sorted_set(set_name), "score": score, "payload": payload})


def parse_unsettled(keys: KeySchema, record: str) -> tuple[SortedSetName, float, str] | None:
    """``(set name, score, payload)`` of a usable record, else None.

    ``set`` may be the name (``retry``) or the key (``cogworker:retry``) of retry, dead or
    schedule; ``score`` a finite number (or numeric string); ``payload`` a string.
    """
    try:
        data = json.loads(record)
    except Exception:  # not JSON, or nested too deep to parse: quarantined
        return None
    if not isinstance(data, dict):
        return None
    by_key = {keys.sorted_set(name): name for name in SORTED_SET_NAMES}
    set_value, score, payload = data.get("set"), data.get("score"), data.get("payload")
    name = (cast("SortedSetName", set_value) if set_value in SORTED_SET_NAMES
            else by_key.get(str(set_value)))
    if name is None or not isinstance(payload, str) or isinstance(score, bool):
        return None
    try:
        number = float(score)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return (name, number, payload) if math.isfinite(number) else None


def file_unsettled(client: redis.Redis, keys: KeySchema,
                   scripts: Scripts) -> list[tuple[SortedSetName, str]]:
    """File every record of the ``unsettled`` list into its sorted set (deleting the job's
    orphan counter); an unusable record goes to the quarantine list (30-day TTL). Returns
    the ``(set name, payload)`` pairs filed, so the caller can run death hooks and release
    locks for those filed in dead. A Redis error ends the walk (logged)."""
    filed: list[tuple[SortedSetName, str]] = []

    def settle(record: str) -> bytes | None:
        parsed = parse_unsettled(keys, record)
        if parsed is None:
            moved, head = scripts.run(
                PACKAGE, "unsettled_quarantine",
                keys=[keys.unsettled, keys.unsettled_quarantine],
                args=[wire(record), QUARANTINE_TTL],
            )
            if moved:
                logger.error("an unusable record of %s was moved to %s (kept 30 days): %.200s",
                             keys.unsettled, keys.unsettled_quarantine, record)
            return head  # type: ignore[no-any-return]
        name, score, payload = parsed
        done, head = scripts.run(
            PACKAGE, "unsettled_file",
            keys=[keys.unsettled, keys.sorted_set(name), counter_key(keys, payload)],
            args=[wire(record), score, wire(payload)],
        )
        if done:
            filed.append((name, payload))
        return head  # type: ignore[no-any-return]

    _walk_logged(client, keys.unsettled, settle)
    return filed


def _walk_logged(client: redis.Redis, key: str, step: Step) -> None:
    try:
        walk_list(client, key, step)
    except BrokerError as exc:
        logger.error("could not finish filing %s (%s); the rest waits for the next pass",
                     key, exc)
