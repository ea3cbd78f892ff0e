"""See and clear unique locks: which job holds each one, and whether that job still exists.

::

    from cogworker.plugins.unique_admin import clear_lock, clear_orphaned, list_locks

    for lock in list_locks(app, job="myapp.jobs.sync_account"):
        print(lock.key, lock.owner, lock.ttl, lock.where)
    clear_orphaned(app)   # locks whose owner job exists nowhere

A lock's value is only its owner's jid (as the original stores it, so a Ruby fleet reads
it too); the job's name comes from finding the owner job. An *orphaned* lock is held for a
job that is nowhere (or already dead), so nothing will ever release it before its TTL.
Window locks (``unique_for``) are meant to outlive their job and are never orphaned.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogworker.plugins.unique_spec import LockKind, kind_of_key
from cogworker.plugins.unique_whereabouts import DEAD, NOWHERE, JobLocator, glob_escape
from cogworker.redis.errors import translate_errors
from cogworker.redis.replies import as_text

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.unique")

UNKNOWN_JOB = "?"
SCAN_COUNT = 1000
READ_BATCH = 500
REPORT_LIMIT = 20


@dataclass(frozen=True, slots=True)
class LockInfo:
    """One unique lock.

    ``ttl`` is the seconds left (None: no expiry). ``kind`` is ``push``
    (until_executed/until_executing), ``run`` (while_executing) or ``window``
    (unique_for). ``where`` is where the owner job is: ``running``, ``queued``,
    ``retrying``, ``scheduled``, ``dead`` or ``nowhere``; ``job`` its name, ``"?"`` when
    it is nowhere.
    """

    key: str
    owner: str
    ttl: float | None
    kind: LockKind
    where: str
    job: str

    @property
    def orphaned(self) -> bool:
        """True when nothing will release it: its owner is nowhere or dead."""
        return self.kind != "window" and self.where in (NOWHERE, DEAD)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "owner": self.owner, "ttl": self.ttl, "kind": self.kind,
                "where": self.where, "job": self.job, "orphaned": self.orphaned}


def _locator(app: App) -> JobLocator:
    broker = app.broker
    return JobLocator(broker.client, broker.keys, app.settings.queues)


def _lock_keys(app: App) -> Iterator[list[str]]:
    """Every key under ``<ns>:unique:``, in batches."""
    broker = app.broker
    pattern = glob_escape(broker.keys.unique_prefix) + "*"
    batch: list[str] = []
    with translate_errors():
        for key in broker.client.scan_iter(match=pattern, count=SCAN_COUNT):
            batch.append(as_text(key))
            if len(batch) >= READ_BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


def _read_owners(app: App, keys: list[str]) -> list[tuple[str, str, float | None]]:
    """(key, owner, ttl) for each key still holding a string; others are skipped."""
    with translate_errors():
        pipe = app.broker.client.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
            pipe.pttl(key)
        replies = pipe.execute(raise_on_error=False)
    held = []
    for index, key in enumerate(keys):
        owner, pttl = replies[2 * index], replies[2 * index + 1]
        if isinstance(owner, Exception):
            logger.warning("unique lock key %s is not a string (%s); skipped", key, owner)
            continue
        if owner is None:
            continue  # released while we read
        ttl = None if not isinstance(pttl, int) or pttl < 0 else pttl / 1000
        held.append((key, as_text(owner), ttl))
    return held


def list_locks(app: App, job: str | None = None) -> list[LockInfo]:
    """Every unique lock, sorted by key; with ``job``, only locks of jobs of that name.

    Reads every place a job can be once (chunked), however many locks there are.
    """
    held = [entry for keys in _lock_keys(app) for entry in _read_owners(app, keys)]
    sightings = _locator(app).locate(owner for _key, owner, _ttl in held)
    locks = []
    for key, owner, ttl in held:
        seen = sightings.get(owner)
        where, name = (seen.where, seen.job_class) if seen else (NOWHERE, UNKNOWN_JOB)
        if job is None or name == job:
            locks.append(LockInfo(key, owner, ttl, kind_of_key(key), where, name))
    return sorted(locks, key=lambda lock: lock.key)


def full_key(app: App, key: str) -> str:
    """``key`` as a full lock key: a bare digest (``3f2a...``, ``3f2a...:run``) is prefixed."""
    prefix = app.keys.unique_prefix
    return key if key.startswith(prefix) else prefix + key


def clear_lock(app: App, key: str) -> bool:
    """Delete one unique lock, whoever holds it. True if it existed.

    ``key`` is the full key or the part after ``<ns>:unique:``; nothing outside that prefix
    is ever touched.
    """
    with translate_errors():
        return bool(app.broker.client.delete(full_key(app, key)))


def _confirmed_orphans(app: App) -> list[LockInfo]:
    """Orphaned locks, looked for a second time so a job that was moving is not taken."""
    candidates = [lock for lock in list_locks(app) if lock.orphaned]
    if not candidates:
        return []
    again = _locator(app).locate(lock.owner for lock in candidates)
    return [lock for lock in candidates
            if lock.owner not in again or again[lock.owner].where == DEAD]


def clear_orphaned(app: App) -> int:
    """Release every orphaned lock (owner-checked: a lock that changed hands stays).

    Returns how many were released.
    """
    locks = app.broker.locks
    cleared = 0
    for lock in _confirmed_orphans(app):
        if locks.release(lock.key, lock.owner):
            cleared += 1
            logger.info("cleared orphaned unique lock %s (jid=%s, owner %s)", lock.key,
                        lock.owner, lock.where)
    return cleared


def report_orphaned_locks(app: App) -> list[LockInfo]:
    """Log one WARNING naming the orphaned locks (if any); returns them."""
    orphans = _confirmed_orphans(app)
    if orphans:
        shown = ", ".join(f"{lock.key} (jid={lock.owner}, {lock.where})"
                          for lock in orphans[:REPORT_LIMIT])
        more = f" and {len(orphans) - REPORT_LIMIT} more" if len(orphans) > REPORT_LIMIT else ""
        logger.warning("%d unique lock(s) are held for jobs that will never release them: "
                       "%s%s. They block duplicates until they expire; see them with "
                       "`cogworker locks list` and clear them with `cogworker locks clear "
                       "--orphaned`", len(orphans), shown, more)
    return orphans
