"""See and clear unique locks: which job holds each one, and whether that job still exists.

::

    from cogworker.plugins.unique_admin import clear_lock, clear_orphaned, list_locks

    for lock in list_locks(app, job="myapp.jobs.sync_account"):
        print(lock.key, lock.owner, lock.ttl, lock.where)
    clear_orphaned(app)   # locks whose owner job exists nowhere

A lock's value is only its owner's jid (as the original stores it, so a Ruby fleet reads
it too); the job's name comes from finding the owner job (``broker.locate``). An
*orphaned* lock is held for a job that is nowhere (or already dead), so nothing will ever
release it before its TTL. Window locks (``unique_for``) are meant to outlive their job and
are never orphaned. Locks are read with ``broker.locks.scan`` and released through
``broker.locks``, so this works on every broker.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogworker.core.broker import LockRecord, Sighting
from cogworker.plugins.unique_spec import LOCK_PREFIX, LockKind, kind_of_lock

if TYPE_CHECKING:
    from cogworker.core.plugin_host import PluginHost

logger = logging.getLogger("cogworker.unique")

UNKNOWN_JOB = "?"
SCAN_LIMIT = 500
REPORT_LIMIT = 20
DEAD = "dead"
NOWHERE = "nowhere"


@dataclass(frozen=True, slots=True)
class LockInfo:
    """One unique lock.

    ``name`` is its lock name (``unique:<digest>``...), ``key`` the same name qualified by
    the namespace (``<namespace>:unique:<digest>``, as the Redis key reads). ``ttl`` is the
    seconds left (None: no expiry). ``kind`` is ``push`` (until_executed/until_executing),
    ``run`` (while_executing) or ``window`` (unique_for). ``where`` is where the owner job
    is: ``running``, ``queued``, ``retrying``, ``scheduled``, ``dead`` or ``nowhere``;
    ``job`` its name, ``"?"`` when it is nowhere.
    """

    key: str
    owner: str
    ttl: float | None
    kind: LockKind
    where: str
    job: str
    name: str = ""

    @property
    def orphaned(self) -> bool:
        """True when nothing will release it: its owner is nowhere or dead."""
        return self.kind != "window" and self.where in (NOWHERE, DEAD)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "owner": self.owner, "ttl": self.ttl,
                "kind": self.kind, "where": self.where, "job": self.job,
                "orphaned": self.orphaned}


def _held_locks(app: PluginHost) -> Iterator[LockRecord]:
    """Every unique lock held now, scan step after scan step."""
    cursor: str | None = None
    while True:
        page = app.broker.locks.scan(LOCK_PREFIX, cursor=cursor, limit=SCAN_LIMIT)
        yield from page.locks
        cursor = page.next_cursor
        if cursor is None:
            return


def locate_all(app: PluginHost, jids: Iterable[str]) -> dict[str, Sighting]:
    """Where each of ``jids`` is (the ones found anywhere), looking through every place."""
    wanted = set(jids)
    found: dict[str, Sighting] = {}
    cursor: str | None = None
    while wanted - found.keys():
        page = app.broker.locate(wanted - found.keys(), cursor)
        found.update(page.found)
        cursor = page.cursor
        if cursor is None:
            break
    return found


def qualified(app: PluginHost, name: str) -> str:
    """A lock name qualified by the namespace: ``<namespace>:<name>``."""
    return f"{app.settings.namespace}:{name}"


def list_locks(app: PluginHost, job: str | None = None) -> list[LockInfo]:
    """Every unique lock, sorted by key; with ``job``, only locks of jobs of that name.

    Reads every place a job can be once (in bounded steps), however many locks there are.
    """
    held = {lock.name: lock for lock in _held_locks(app)}  # a scan may return one twice
    sightings = locate_all(app, (lock.owner for lock in held.values()))
    locks = []
    for lock in held.values():
        seen = sightings.get(lock.owner)
        where, name = (seen.where, seen.job_class) if seen else (NOWHERE, UNKNOWN_JOB)
        if job is None or name == job:
            locks.append(LockInfo(qualified(app, lock.name), lock.owner, lock.ttl,
                                  kind_of_lock(lock.name), where, name, lock.name))
    return sorted(locks, key=lambda lock: lock.key)


def lock_name_of(app: PluginHost, key: str) -> str | None:
    """The unique lock ``key`` names: its full key (``<namespace>:unique:...``, also in
    cluster form ``{<namespace>}:unique:...``), its name (``unique:...``) or the part after
    ``unique:`` (a digest, ``<digest>:run``). None for a key of another namespace."""
    namespace = app.settings.namespace
    for prefix in (f"{namespace}:", f"{{{namespace}}}:"):
        if key.startswith(prefix + LOCK_PREFIX):
            return key[len(prefix):]
    if key.startswith(LOCK_PREFIX):
        return key
    if not key or ":unique:" in key:
        return None  # someone else's namespace: never touched
    return LOCK_PREFIX + key


def clear_lock(app: PluginHost, key: str) -> bool:
    """Delete one unique lock, whoever holds it. True if it existed.

    ``key`` is the full key, the lock name or the part after ``unique:``; nothing but a
    unique lock of this namespace is ever touched.
    """
    name = lock_name_of(app, key)
    return name is not None and app.broker.locks.delete(name)


def _confirmed_orphans(app: PluginHost) -> list[LockInfo]:
    """Orphaned locks, looked for a second time so a job that was moving is not taken."""
    candidates = [lock for lock in list_locks(app) if lock.orphaned]
    if not candidates:
        return []
    again = locate_all(app, (lock.owner for lock in candidates))
    return [lock for lock in candidates
            if lock.owner not in again or again[lock.owner].where == DEAD]


def clear_orphaned(app: PluginHost) -> int:
    """Release every orphaned lock (owner-checked: a lock that changed hands stays).

    Returns how many were released.
    """
    locks = app.broker.locks
    cleared = 0
    for lock in _confirmed_orphans(app):
        if locks.release(lock.name, lock.owner):
            cleared += 1
            logger.info("cleared orphaned unique lock %s (jid=%s, owner %s)", lock.key,
                        lock.owner, lock.where)
    return cleared


def report_orphaned_locks(app: PluginHost) -> list[LockInfo]:
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
