"""Plugin ``periodic-locks``: the cron slot claim and the ``until_executed`` running lock.

Active by default. It implements the periodic-lock hooks on Redis:

* the **claim** (``periodic_claim.lua``): a slot fires at most once fleet-wide, guarded by
  the entry's last slot and a per-slot NX lock; for ``until_executed`` entries the running
  lock ``periodic:running:<pjid>`` (value = the job's jid) is written in the same step, with
  the queued TTL (``unique_lock_ttl``), before the job exists;
* the **rollback** of a won claim whose push failed (``periodic_rollback.lua``);
* the running lock's upkeep: shortened to the active TTL (``orphan_threshold + 120 s``) when
  the job starts, kept there by the owner's heartbeat, **re-taken** if it went missing while
  the job runs (``periodic_retake.lua``), and **released**, owner-checked, when the job
  finished for good.

A release that fails because Redis is unavailable is kept in memory and retried after every
heartbeat and once more at shutdown; without that, an entry would stay closed for up to the
active TTL after a short outage. Deferred releases are lost if the process dies (the lock
then lapses by its TTL).
"""

from __future__ import annotations

import logging
import math
import threading
from typing import TYPE_CHECKING, Final, cast

from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.markers import hookimpl
from cogworker.core.periodic_types import ClaimOutcome, ClaimResult, PeriodicEntry
from cogworker.redis.locks import whole_seconds
from cogworker.redis.replies import as_text

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.payload import Payload

logger = logging.getLogger(__name__)

LUA_PACKAGE: Final = "cogworker.plugins"
EXTRA_KEY: Final = "periodic-locks"
SLOT_LOCK_TTL: Final = 20  # seconds: four ticks; the last-slot guard does the lasting work
ACTIVE_TTL_MARGIN: Final = 120.0  # beyond orphan_threshold: detection plus one check interval
UNTIL_EXECUTED: Final = "until_executed"
BLOCKED: Final = 2


def queued_ttl(app: App) -> int:
    """Running lock TTL while the job waits in a queue: ``ceil(unique_lock_ttl)``."""
    return whole_seconds(app.settings.unique_lock_ttl)


def active_ttl(app: App) -> int:
    """Running lock TTL while the job runs: ``ceil(orphan_threshold + 120)``.

    It outlives the time it takes to declare the owner dead and requeue its job, so a
    recovered run still finds the lock and re-takes it instead of racing the next slot.
    """
    return math.ceil(app.settings.orphan_threshold + ACTIVE_TTL_MARGIN)


class DeferredReleases:
    """Running-lock releases that failed while Redis was away: lock key → owner jid."""

    def __init__(self) -> None:
        self._pending: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, key: str, owner: str) -> None:
        with self._lock:
            self._pending[key] = owner

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def retry(self, app: App) -> None:
        """Try each pending release once; stop at the first unavailability (try later)."""
        with self._lock:
            pending = list(self._pending.items())
        for key, owner in pending:
            try:
                app.broker.locks.release(key, owner)
            except BrokerUnavailableError:
                return
            except Exception:
                logger.exception("dropping the deferred release of cron lock %s (owner %s)",
                                 key, owner)
            with self._lock:
                if self._pending.get(key) == owner:
                    del self._pending[key]


def deferred_releases(app: App) -> DeferredReleases:
    """This app's deferred releases (created on first use, kept across reconfiguration)."""
    deferred = app.extras.get(EXTRA_KEY)
    if deferred is None:
        deferred = app.extras.setdefault(EXTRA_KEY, DeferredReleases())
    return cast("DeferredReleases", deferred)


def _running_key(app: App, job: Payload) -> tuple[str, str] | None:
    pjid, jid = job.get("periodic_pjid"), job.get("jid")
    if not isinstance(pjid, str) or not pjid or not isinstance(jid, str) or not jid:
        return None
    return app.keys.periodic_running(pjid), jid


# -- claim and rollback ------------------------------------------------------------------------


def claim_slot(app: App, entry: PeriodicEntry, slot: int, jid: str) -> ClaimResult:
    """Run the claim script for ``slot`` of ``entry`` (see ``periodic_claim.lua``)."""
    keys = app.keys
    reply = app.broker.scripts.run(
        LUA_PACKAGE,
        "periodic_claim",
        [keys.periodic_running(entry.pjid), keys.periodic_last_slot(entry.pjid),
         keys.periodic_slot_lock(entry.pjid, slot)],
        [slot, UNTIL_EXECUTED if entry.until_executed else "", SLOT_LOCK_TTL, jid,
         queued_ttl(app)],
    )
    if isinstance(reply, list):
        previous = as_text(reply[1]) if len(reply) > 1 else ""
        return ClaimResult(ClaimOutcome.WON, int(previous) if previous else None)
    if int(reply) == BLOCKED:
        return ClaimResult(ClaimOutcome.BLOCKED)
    return ClaimResult(ClaimOutcome.LOST)


def rollback_claim(
    app: App, entry: PeriodicEntry, slot: int, previous_slot: int | None, jid: str
) -> bool:
    """Run the rollback script; True when the last slot was put back."""
    keys = app.keys
    reply = app.broker.scripts.run(
        LUA_PACKAGE,
        "periodic_rollback",
        [keys.periodic_last_slot(entry.pjid), keys.periodic_slot_lock(entry.pjid, slot),
         keys.periodic_running(entry.pjid)],
        [slot, "" if previous_slot is None else previous_slot, jid],
    )
    return bool(reply)


def retake_lock(app: App, job: Payload, ttl: float) -> bool:
    """Take the job's running lock if missing, refresh it if owned; False if another owns it."""
    target = _running_key(app, job)
    if target is None:
        return False
    key, jid = target
    reply = app.broker.scripts.run(LUA_PACKAGE, "periodic_retake", [key],
                                   [jid, whole_seconds(ttl)])
    return bool(reply)


def touch_lock(app: App, job: Payload, ttl: float) -> bool:
    """Set the job's running lock TTL if the job still owns it."""
    target = _running_key(app, job)
    return target is not None and app.broker.locks.extend(target[0], target[1], ttl)


# -- hooks ----------------------------------------------------------------------------------


@hookimpl
def cogworker_configure(app: App) -> None:
    deferred_releases(app)


@hookimpl
def cogworker_claim_periodic_slot(
    app: App, entry: PeriodicEntry, slot: int, jid: str
) -> ClaimResult | None:
    return claim_slot(app, entry, slot, jid)


@hookimpl
def cogworker_rollback_periodic_claim(
    app: App, entry: PeriodicEntry, slot: int, previous_slot: int | None, jid: str
) -> bool | None:
    return rollback_claim(app, entry, slot, previous_slot, jid)


@hookimpl
def cogworker_retake_periodic_lock(app: App, job: Payload, ttl: float) -> None:
    retake_lock(app, job, ttl)


@hookimpl
def cogworker_touch_periodic_lock(app: App, job: Payload, ttl: float) -> None:
    touch_lock(app, job, ttl)


@hookimpl
def cogworker_release_periodic_lock(app: App, job: Payload) -> None:
    target = _running_key(app, job)
    if target is None:
        return
    key, jid = target
    try:
        app.broker.locks.release(key, jid)
    except BrokerUnavailableError:
        deferred_releases(app).add(key, jid)
        logger.warning("could not release cron lock %s (owner %s): Redis unavailable; "
                       "retrying after each heartbeat", key, jid)


@hookimpl
def cogworker_heartbeat(worker: WorkerHandle) -> None:
    """Retry deferred releases, then keep the running locks of this process's cron jobs."""
    app = worker.app
    deferred_releases(app).retry(app)
    ttl = active_ttl(app)
    for job in worker.performing_jobs():
        if not job.get("periodic_pjid"):
            continue
        try:
            if job.get("periodic_until_executed") is True:
                retake_lock(app, job, ttl)
            else:
                touch_lock(app, job, ttl)
        except BrokerUnavailableError:
            return  # the next beat tries again
        except Exception:
            logger.exception("could not refresh the cron lock of jid=%s", job.get("jid"))


@hookimpl
def cogworker_shutdown(worker: WorkerHandle) -> None:
    """A last try at the deferred releases."""
    deferred_releases(worker.app).retry(worker.app)
