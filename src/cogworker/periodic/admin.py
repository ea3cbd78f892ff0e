"""Operating cron entries: list them, run one now, disable and enable.

The fleet's view is the schedule every ticker publishes at start (``broker.periodic``);
entries this app registered that no process has published yet are listed too
(``published`` False).
An entry is named by its pjid or any unique prefix of it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogworker.core.broker import running_lock_name
from cogworker.core.errors import UnknownPeriodicEntryError
from cogworker.core.periodic_types import PeriodicEntry
from cogworker.periodic.cron import CronExpressionError, next_fire
from cogworker.periodic.registration import all_entries

if TYPE_CHECKING:
    from cogworker.app import App


@dataclass(frozen=True, slots=True)
class EntryStatus:
    """One cron entry as an operator sees it. Times are epoch seconds.

    ``next_run`` is None when the entry is disabled or its expression is invalid
    (``valid`` False); ``last_run`` is the last claimed slot (None: never);
    ``running_owner`` is the jid holding the ``until_executed`` running lock, if any.
    """

    pjid: str
    cron: str
    job: str
    args: list[Any]
    queue: str
    retry: Any
    unique: str | None
    next_run: float | None
    last_run: int | None
    enabled: bool
    running_owner: str | None
    valid: bool
    published: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def known_entries(app: App) -> dict[str, tuple[PeriodicEntry, bool]]:
    """Published entries, then this app's unpublished ones: pjid → (entry, published)."""
    known = {pjid: (entry, True) for pjid, entry in app.broker.periodic.schedule().items()}
    for entry in all_entries(app):
        known.setdefault(entry.pjid, (entry, False))
    return known


def resolve_entry(app: App, name: str) -> tuple[str, PeriodicEntry]:
    """(pjid, entry) of the entry whose pjid is ``name`` or starts with it.

    Raises :class:`UnknownPeriodicEntryError` when no entry or several entries match.
    """
    known = known_entries(app)
    if name in known:
        return name, known[name][0]
    matches = sorted(pjid for pjid in known if name and pjid.startswith(name))
    if len(matches) == 1:
        return matches[0], known[matches[0]][0]
    if not matches:
        raise UnknownPeriodicEntryError(
            f"no cron entry has a pjid starting with {name!r}; `cogworker cron list` shows "
            f"the {len(known)} known entr{'y' if len(known) == 1 else 'ies'} and their pjids"
        )
    raise UnknownPeriodicEntryError(
        f"{name!r} matches {len(matches)} cron entries ({', '.join(m[:12] for m in matches)}); "
        "give more characters of the pjid"
    )


def list_entries(app: App, now: float | None = None) -> list[EntryStatus]:
    """Every known entry with its next run, last run, state and running-lock owner."""
    now = time.time() if now is None else now
    known = known_entries(app)
    periodic = app.broker.periodic
    disabled = periodic.disabled()
    last_runs = periodic.last_slots(known)
    held = app.broker.locks.get([running_lock_name(pjid) for pjid in known])
    owners = {pjid: lock.owner for pjid in known
              if (lock := held.get(running_lock_name(pjid))) is not None}
    statuses = []
    for pjid, (entry, published) in known.items():
        enabled = pjid not in disabled
        try:
            upcoming: float | None = next_fire(entry, now)
            valid = True
        except CronExpressionError:
            upcoming, valid = None, False
        statuses.append(EntryStatus(
            pjid=pjid, cron=entry.cron, job=entry.job_name, args=list(entry.args),
            queue=entry.queue, retry=entry.retry, unique=entry.unique,
            next_run=upcoming if enabled else None, last_run=last_runs.get(pjid),
            enabled=enabled, running_owner=owners.get(pjid), valid=valid,
            published=published,
        ))
    return statuses


def run_now(app: App, name: str) -> str | None:
    """Push the entry's job once, as an ordinary job: no slot, no lock, no last-slot change.

    Returns the jid (None when a client middleware skipped it).
    """
    _, entry = resolve_entry(app, name)
    return app.push({"class": entry.job_name, "args": list(entry.args), "retry": entry.retry,
                     "queue": entry.queue})


def disable(app: App, name: str) -> str:
    """Stop the entry firing, fleet-wide, until :func:`enable`; returns its pjid.

    While disabled neither its last slot nor its locks move, so "last run" keeps showing
    the last real run.
    """
    pjid, _ = resolve_entry(app, name)
    app.broker.periodic.set_disabled(pjid, True)
    return pjid


def enable(app: App, name: str) -> str:
    """Let a disabled entry fire again from its next unhandled slot (no burst); its pjid."""
    pjid, _ = resolve_entry(app, name)
    app.broker.periodic.set_disabled(pjid, False)
    return pjid
