"""Enqueueing a won cron slot, and rolling the claim back when the push fails.

A claim advances the entry's last slot before the job exists. If the push then fails, the
claim is rolled back (last slot, slot lock and running lock) so a later tick claims the
same slot again: the slot is never silently lost. A rollback that itself fails is kept
in memory and retried at the start of every tick; until it succeeds the ticker leaves that
entry alone (a claim would find the slot taken and count it as done).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Final

from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.outage import OutageLog
from cogworker.core.payload import Payload
from cogworker.core.periodic_types import PeriodicEntry

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.periodic")

BACKOFF_BASE: Final = 5.0
BACKOFF_MAX: Final = 300.0
ROLLBACK_SITE: Final = "cron rollback"


def slot_time(slot: int) -> str:
    """A cron slot (epoch seconds) as log lines show it: ISO 8601 in UTC."""
    return datetime.fromtimestamp(slot, tz=timezone.utc).isoformat()


def backoff_delay(failures: int) -> float:
    """5, 10, 20 … seconds, at most 300, after ``failures`` consecutive errors."""
    exponent: int = max(failures - 1, 0)
    return min(BACKOFF_BASE * float(2**exponent), BACKOFF_MAX)


def slot_payload(entry: PeriodicEntry, slot: int, jid: str) -> Payload:
    """The job for one slot: the entry's job, args, retry and queue, plus the periodic fields."""
    payload: Payload = {
        "class": entry.job_name, "args": list(entry.args), "retry": entry.retry,
        "queue": entry.queue, "jid": jid, "periodic_pjid": entry.pjid, "periodic_slot": slot,
    }
    if entry.until_executed:
        payload["periodic_until_executed"] = True
    return payload


@dataclass(slots=True)
class _Rollback:
    entry: PeriodicEntry
    slot: int
    previous_slot: int | None
    jid: str
    failures: int = 0
    retry_at: float = 0.0


class PendingRollbacks:
    """Claim rollbacks that failed, by pjid, retried until they succeed (lost on restart)."""

    def __init__(self, app: App, outages: OutageLog,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._app = app
        self._outages = outages
        self._monotonic = monotonic
        self._pending: dict[str, _Rollback] = {}
        self._lock = threading.Lock()

    def blocks(self, pjid: str) -> bool:
        """True while a rollback for that entry is still pending."""
        with self._lock:
            return pjid in self._pending

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def roll_back(self, entry: PeriodicEntry, slot: int, previous_slot: int | None,
                  jid: str) -> None:
        """Roll a claim back now; if that fails keep it for :meth:`retry_due`."""
        rollback = _Rollback(entry, slot, previous_slot, jid)
        if not self._attempt(rollback):
            with self._lock:
                self._pending[entry.pjid] = rollback

    def retry_due(self) -> None:
        """Retry each pending rollback whose back-off has passed (each one isolated)."""
        now = self._monotonic()
        with self._lock:
            due = [item for item in self._pending.values() if item.retry_at <= now]
        for rollback in due:
            if self._attempt(rollback):
                with self._lock:
                    self._pending.pop(rollback.entry.pjid, None)

    def _attempt(self, rollback: _Rollback) -> bool:
        entry = rollback.entry
        try:
            self._app.hooks.rollback_periodic_claim(
                self._app, entry, rollback.slot, rollback.previous_slot, rollback.jid
            )
        except Exception as exc:
            if not isinstance(exc, BrokerUnavailableError):
                rollback.failures += 1
                rollback.retry_at = self._monotonic() + backoff_delay(rollback.failures)
            self._outages.report(ROLLBACK_SITE, exc)
            logger.warning("cron %s (%s): could not roll back the claim of slot %s; retrying "
                           "before the entry fires again", entry.job_name, entry.pjid[:12],
                           slot_time(rollback.slot))
            return False
        self._outages.recovered(ROLLBACK_SITE)
        logger.info("cron %s (%s): claim of slot %s rolled back; a later tick fires it",
                    entry.job_name, entry.pjid[:12], slot_time(rollback.slot))
        return True


def enqueue_slot(app: App, entry: PeriodicEntry, slot: int, jid: str,
                 previous_slot: int | None, rollbacks: PendingRollbacks) -> str | None:
    """Push the job of a won slot through the client path; roll back and re-raise on error."""
    payload = slot_payload(entry, slot, jid)
    definition = app.registry.get(entry.job_name)
    if definition is not None and "expires_in" in definition.options:
        payload["expires_in"] = definition.options["expires_in"]  # counted from the slot's push
    try:
        pushed = app.push(payload)
    except Exception:
        rollbacks.roll_back(entry, slot, previous_slot, jid)
        raise
    if pushed is None:
        logger.info("cron %s (%s): slot %s skipped by a client middleware (unique duplicate)",
                    entry.job_name, entry.pjid[:12], slot_time(slot))
        if entry.until_executed:
            app.hooks.release_periodic_lock(app, payload)
    elif pushed != jid:
        logger.warning("cron %s (%s): a client middleware changed the jid from %s to %s; the "
                       "running lock is owned by a jid no job carries and keeps the entry "
                       "closed until it expires", entry.job_name, entry.pjid[:12], jid, pushed)
    else:
        logger.info("cron %s (%s): enqueued slot %s jid=%s queue=%s", entry.job_name,
                    entry.pjid[:12], slot_time(slot), jid, entry.queue)
    return pushed
