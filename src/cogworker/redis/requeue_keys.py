"""The keys one requeue of a raw payload touches, computed on the client side.

Lua cannot build key names (every key a script touches must be passed in ``KEYS``), so the
keys a requeue touches are computed here from the raw payload:

* the target queue: the payload's ``queue`` when it is a non-empty string, else ``default``
  (where the processor buries an unreadable payload as unparseable);
* the lock to re-take with it, when the caller's ``relock`` names one
  (:class:`~cogworker.core.broker.LockClaim`): its key, owner and TTL;
* the orphan counter: ``orphanings:<jid>``, or ``orphanings:raw-<sha1>`` for a payload
  without a jid, so that even such a payload cannot kill processes forever.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from cogworker.core.broker import LockClaim, Relock
from cogworker.core.payload import DEFAULT_QUEUE
from cogworker.redis.keys import KeySchema
from cogworker.redis.lock_store import whole_seconds
from cogworker.redis.replies import wire

logger = logging.getLogger(__name__)


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


def claimed_lock(relock: Relock | None, raw: str) -> LockClaim | None:
    """What ``relock`` names for ``raw``; an exception from it counts as None (logged)."""
    if relock is None:
        return None
    try:
        return relock(raw)
    except Exception:
        logger.exception("naming the lock to re-take with a requeued job failed; requeueing "
                         "it without one: %.200s", raw)
        return None


@dataclass(frozen=True, slots=True)
class RequeueTarget:
    """The keys (and lock arguments) a Lua requeue of one raw payload touches."""

    queue: str
    queue_key: str
    counter_key: str
    lock_key: str | None
    lock_owner: str
    lock_ttl: int

    def lock_keys(self) -> list[str]:
        """``[lock_key]`` when a lock is re-taken with the job, else ``[]`` (an optional
        KEY)."""
        return [] if self.lock_key is None else [self.lock_key]


def requeue_target(keys: KeySchema, raw: str, relock: Relock | None = None) -> RequeueTarget:
    """Where ``raw`` goes when it is requeued, and which keys that touches; never raises
    (whatever ``raw`` holds, it is requeued as opaque bytes onto ``default``)."""
    claim = claimed_lock(relock, raw)
    job = parse_job(raw)
    queue = job.get("queue") if job is not None else None
    if not isinstance(queue, str) or not queue:
        queue = DEFAULT_QUEUE
    lock_key, owner, ttl = _lock_arguments(keys, claim, raw)
    return RequeueTarget(queue=queue, queue_key=keys.queue(queue),
                         counter_key=keys.orphanings(counter_id(raw, job)),
                         lock_key=lock_key, lock_owner=owner, lock_ttl=ttl)


def _lock_arguments(keys: KeySchema, claim: LockClaim | None,
                    raw: str) -> tuple[str | None, str, int]:
    """(key, owner, whole-second TTL) of ``claim``; (None, "", 1) without one, also for a
    claim no lock can be made of (an empty name, a TTL that is not a number: logged)."""
    if claim is None:
        return None, "", 1
    try:
        return keys.lock(claim.name), str(claim.owner), whole_seconds(claim.ttl)
    except (ValueError, TypeError, OverflowError) as exc:
        logger.error("the lock named for a requeued job cannot be taken (%s); requeueing it "
                     "without one: %.200s", exc, raw)
        return None, "", 1


_JID_FIELD = '"jid":"'


def plain_jid(raw: str) -> str | None:
    """The jid of a payload as cogworker writes it (compact JSON), read without parsing it;
    None whenever that is not certain, and the caller parses.

    Certain means: the text starts with ``{``, holds one ``"jid"`` and no other ``{`` before
    it, and that ``"`` follows ``{`` or ``,``: an unescaped ``"`` cannot occur inside a JSON
    string, so the field is a key of the top-level object; and its value holds no escape.
    For a text that is valid JSON the answer is :func:`parse_job`'s; only the ack path,
    whose payloads the worker has decoded, relies on it (:func:`settled_counter_key`).
    """
    at = raw.find(_JID_FIELD)
    if at < 1 or raw[0] != "{" or raw[at - 1] not in "{," or raw.count("{", 0, at) != 1:
        return None
    if raw.find('"jid"', at + 1) >= 0:  # a second one (nested, or a duplicate key)
        return None
    start = at + len(_JID_FIELD)
    end = raw.find('"', start)
    if end <= start:
        return None
    jid = raw[start:end]
    return None if "\\" in jid else jid


def counter_key(keys: KeySchema, raw: str) -> str:
    """The orphan counter key of ``raw`` (see :func:`counter_id`)."""
    return keys.orphanings(counter_id(raw, parse_job(raw)))


def settled_counter_key(keys: KeySchema, raw: str) -> str:
    """:func:`counter_key` of a payload the worker decoded (a job being acknowledged):
    read with :func:`plain_jid` when it can be, parsed otherwise. Every job's ack pays it."""
    jid = plain_jid(raw)
    return keys.orphanings(jid) if jid is not None else counter_key(keys, raw)
