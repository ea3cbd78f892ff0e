"""Unique and cron locks a page at a time: owner, TTL, and where the owner job is now.

Unique locks can be as many as jobs, so they are read with a ``SCAN`` cursor in bounded
steps (never all at once) and a page hands back the cursor to go on from. Cron running
locks are one per cron entry and come first. Where an owner job is costs a pass over the
places jobs live, so it is asked for separately, a bounded slice at a time
(:func:`cogworker.api.owner_search.locate`), for one page's owners.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from cogworker.api.search import ascii_case_glob
from cogworker.periodic.admin import known_entries
from cogworker.plugins.unique_spec import kind_of_key
from cogworker.plugins.unique_whereabouts import DEAD, NOWHERE
from cogworker.redis.errors import translate_errors
from cogworker.redis.replies import as_text

if TYPE_CHECKING:
    from cogworker.app import App

LockKindName = Literal["push", "run", "window", "cron"]
MAX_SCAN_COUNT = 8000
SCAN_STEPS = 24
"""SCAN calls one page makes at most before handing back its cursor. Each asks for as many
keys as the page still needs, twice as many after a call that found none (up to 8,000), so
a sparse keyspace is crossed in few calls and a dense one never reads far past the page."""


@dataclass(frozen=True, slots=True)
class LockRow:
    """One lock. ``name`` is what to call it (the digest, or the cron job); ``ttl`` seconds
    left (None: no expiry); ``pjid`` is set for a cron lock."""

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
    """Continue the unique-lock scan from here; None when every key was looked at."""
    examined_steps: int


def _ttl(pttl: object) -> float | None:
    return pttl / 1000 if isinstance(pttl, int) and pttl >= 0 else None


def cron_locks(app: App, needle: str = "") -> list[LockRow]:
    """The cron running locks held now, one per entry at most."""
    entries = known_entries(app)
    pjids = sorted(entries)
    if not pjids:
        return []
    with translate_errors():
        pipe = app.broker.client.pipeline(transaction=False)
        for pjid in pjids:
            pipe.get(app.keys.periodic_running(pjid))
            pipe.pttl(app.keys.periodic_running(pjid))
        replies = pipe.execute()
    rows = []
    for index, pjid in enumerate(pjids):
        owner = replies[2 * index]
        name = entries[pjid][0].job_name
        if owner is None or (needle and needle not in f"{name} {pjid}".lower()):
            continue
        rows.append(LockRow(app.keys.periodic_running(pjid), name, as_text(owner),
                            _ttl(replies[2 * index + 1]), "cron", pjid))
    return rows


def lock_page(app: App, *, query: str = "", cursor: str | None = None,
              limit: int = 50) -> LockPage:
    """Cron locks (on the first page), then unique locks whose key contains ``query``."""
    needle = query.strip().lower()
    prefix = app.keys.unique_prefix
    rows = cron_locks(app, needle) if cursor is None else []
    pattern = "".join(ascii_case_glob(prefix)) + "*"
    if needle:
        pattern += "".join(ascii_case_glob(needle)) + "*"
    position = int(cursor) if cursor and cursor.isdigit() else 0
    keys: dict[str, None] = {}
    steps = 0
    count = limit
    with translate_errors():
        while steps < SCAN_STEPS and len(keys) < limit:
            position, batch = app.broker.client.scan(position, match=pattern, count=count)
            steps += 1
            keys.update(dict.fromkeys(as_text(key) for key in batch))
            count = min(count * 2, MAX_SCAN_COUNT) if not batch else max(limit - len(keys), 10)
            if position == 0:
                break
    rows += _unique_rows(app, sorted(keys))
    return LockPage(rows, str(position) if position != 0 else None, steps)


def _unique_rows(app: App, keys: list[str]) -> list[LockRow]:
    if not keys:
        return []
    prefix = app.keys.unique_prefix
    with translate_errors():
        pipe = app.broker.client.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
            pipe.pttl(key)
        replies = pipe.execute(raise_on_error=False)
    rows = []
    for index, key in enumerate(keys):
        owner = replies[2 * index]
        if owner is None or isinstance(owner, Exception):
            continue  # released meanwhile, or not a lock value
        rows.append(LockRow(key, key[len(prefix):], as_text(owner),
                            _ttl(replies[2 * index + 1]), kind_of_key(key)))
    return rows


def clear_cron_lock(app: App, pjid: str) -> bool:
    """Delete one cron entry's running lock, so its next slot may run; True if it existed."""
    with translate_errors():
        return bool(app.broker.client.delete(app.keys.periodic_running(pjid)))
