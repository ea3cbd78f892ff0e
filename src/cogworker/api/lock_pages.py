"""Unique and cron locks a page at a time: owner, TTL, and where the owner job is now.

Unique locks can be as many as jobs, so they are read with ``broker.locks.scan`` in bounded
steps (never all at once) and a page hands back the cursor to go on from. Cron running
locks are one per cron entry and come first. Where an owner job is costs a pass over the
places jobs live, so it is asked for separately, a bounded slice at a time
(:func:`cogworker.api.owner_search.locate`), for one page's owners.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from cogworker.core.broker import running_lock_name
from cogworker.periodic.admin import known_entries
from cogworker.plugins.unique_admin import DEAD, NOWHERE
from cogworker.plugins.unique_spec import LOCK_PREFIX, kind_of_lock

if TYPE_CHECKING:
    from cogworker.app import App

LockKindName = Literal["push", "run", "window", "cron"]


@dataclass(frozen=True, slots=True)
class LockRow:
    """One lock. ``key`` is its lock name (what releasing it takes); ``name`` is what to
    call it (the digest, or the cron job); ``ttl`` seconds left (None: no expiry); ``pjid``
    is set for a cron lock."""

    key: str
    name: str
    owner: str
    ttl: float | None
    kind: LockKindName
    pjid: str | None = None

    def orphaned(self, where: str | None) -> bool:
        """Whether nothing will release it, given where its owner is (None: nowhere)."""
        return self.kind != "window" and where in (NOWHERE, DEAD, None)


@dataclass(frozen=True)
class LockPage:
    locks: list[LockRow]
    next_cursor: str | None
    """Continue the unique-lock scan from here; None when every lock was looked at."""
    examined_steps: int


def cron_locks(app: App, needle: str = "") -> list[LockRow]:
    """The cron running locks held now, one per entry at most."""
    entries = known_entries(app)
    pjids = sorted(entries)
    held = app.broker.locks.get([running_lock_name(pjid) for pjid in pjids])
    rows = []
    for pjid in pjids:
        lock = held.get(running_lock_name(pjid))
        name = entries[pjid][0].job_name
        if lock is None or (needle and needle not in f"{name} {pjid}".lower()):
            continue
        rows.append(LockRow(lock.name, name, lock.owner, lock.ttl, "cron", pjid))
    return rows


def lock_page(app: App, *, query: str = "", cursor: str | None = None,
              limit: int = 50) -> LockPage:
    """Cron locks (on the first page), then unique locks whose name contains ``query``."""
    needle = query.strip().lower()
    rows = cron_locks(app, needle) if cursor is None else []
    try:
        page = app.broker.locks.scan(LOCK_PREFIX, contains=needle, cursor=cursor,
                                     limit=max(limit, 1))
    except ValueError:  # a cursor from an old link that is no cursor: start again
        page = app.broker.locks.scan(LOCK_PREFIX, contains=needle, limit=max(limit, 1))
    rows += [LockRow(lock.name, lock.name.removeprefix(LOCK_PREFIX), lock.owner, lock.ttl,
                     kind_of_lock(lock.name)) for lock in page.locks]
    return LockPage(rows, page.next_cursor, 1)


def clear_cron_lock(app: App, pjid: str) -> bool:
    """Delete one cron entry's running lock, so its next slot may run; True if it existed."""
    return app.broker.locks.delete(running_lock_name(pjid)) if pjid else False
