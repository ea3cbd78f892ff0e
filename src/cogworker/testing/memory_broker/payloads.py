"""What the memory broker reads in a payload: where a requeued job goes, its orphan counter,
and the dead record of a job orphaned too often.

The same rules as the Redis broker's (its ``requeue.py`` and ``filing.py``), kept here so
the memory broker never imports :mod:`cogworker.redis`. Every function takes any text and
never raises: recovery must get past every entry, whatever it holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from cogworker.core.payload import DEFAULT_QUEUE

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def parse_job(raw: str) -> dict[str, Any] | None:
    """The payload as a dict, or None when it is not a JSON object."""
    try:
        job = json.loads(raw)
    except Exception:  # RecursionError on deep nesting included: "not a job"
        return None
    return job if isinstance(job, dict) else None


def requeue_queue(raw: str) -> str:
    """The queue a requeued ``raw`` goes back to: its ``queue`` field, else ``default``."""
    job = parse_job(raw)
    queue = job.get("queue") if job is not None else None
    return queue if isinstance(queue, str) and queue else DEFAULT_QUEUE


def counter_id(raw: str) -> str:
    """The id ``raw``'s orphan counter is kept under: its jid, or a digest of its bytes."""
    job = parse_job(raw)
    jid = job.get("jid") if job is not None else None
    if isinstance(jid, str) and jid:
        return jid
    return "raw-" + hashlib.sha1(raw.encode("utf-8", "surrogateescape")).hexdigest()


def job_class(job: Mapping[str, Any]) -> str:
    """The payload's ``class``, ``?`` when it has none."""
    klass = job.get("class")
    return klass if isinstance(klass, str) and klass else "?"


def ascii_lower(text: str) -> str:
    """``text`` with ASCII letters lower-cased and everything else kept (as Lua's
    ``string.lower`` in the C locale)."""
    return text.translate(_ASCII_LOWER)
