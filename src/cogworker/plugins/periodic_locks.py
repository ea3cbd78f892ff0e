"""Plugin ``periodic-locks``: the cron slot claim and the ``until_executed`` running lock.

Active by default. It implements the periodic-lock hooks on the broker contract:

* the **claim** (``broker.periodic.claim_slot``): a slot fires at most once fleet-wide; for
  ``until_executed`` entries the running lock (named
  :func:`~cogworker.core.broker.running_lock_name`, owned by the job's jid) is taken in the
  same step, with the queued TTL (its option ``queued_lock_ttl``, alias the top-level
  ``unique_lock_ttl``), before the job exists;
* the **rollback** of a won claim whose push failed (``broker.periodic.rollback_claim``);
* the running lock's upkeep through ``broker.locks``: shortened to the active TTL
  (``orphan_threshold + 120 s``) when the job starts, kept there by the owner's heartbeat,
  **re-taken** if it went missing while the job runs, **re-taken with every requeue** of an
  ``until_executed`` run (the ``cogworker_requeue_lock`` hook, so a requeued run keeps its
  entry closed), and **released**, owner-checked, when the job finished for good.

The engine calls the lock hooks for every job; a job without ``periodic_pjid`` is not this
plugin's and is left alone. A release that fails because the broker is unavailable is kept
in memory and retried after every heartbeat and once more at shutdown; without that, an
entry would stay closed for up to the active TTL after a short outage. Deferred releases
are lost if the process dies (the lock then lapses by its TTL).
"""

from __future__ import annotations

import logging
import math
import threading
from typing import TYPE_CHECKING, Final, cast

from cogworker.core.broker import LockClaim, running_lock_name
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.markers import hookimpl
from cogworker.core.periodic_types import ClaimResult, PeriodicEntry
from cogworker.core.plugin_options import AliasedOption, read_plugin_options

if TYPE_CHECKING:
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost, PluginHostBase

logger = logging.getLogger(__name__)

PLUGIN_NAME: Final = "periodic-locks"
EXTRA_KEY: Final = PLUGIN_NAME
OPTIONS: Final = (AliasedOption("queued_lock_ttl", alias="unique_lock_ttl"),)
SLOT_LOCK_TTL: Final = 20  # seconds: four ticks; the last-slot guard does the lasting work
ACTIVE_TTL_MARGIN: Final = 120.0  # beyond orphan_threshold: detection plus one check interval


def queued_ttl(app: PluginHostBase) -> int:
    """Running lock TTL while the job waits in a queue: ``ceil(queued_lock_ttl)`` (read
    on each use: claims and requeues are rare; checked at configure)."""
    options = read_plugin_options(app.settings, PLUGIN_NAME, OPTIONS)
    return max(1, math.ceil(float(options["queued_lock_ttl"])))


def active_ttl(app: PluginHostBase) -> int:
    """Running lock TTL while the job runs: ``ceil(orphan_threshold + 120)``.

    It outlives the time it takes to declare the owner dead and requeue its job, so a
    recovered run still finds the lock and re-takes it instead of racing the next slot.
    """
    return math.ceil(app.settings.orphan_threshold + ACTIVE_TTL_MARGIN)


class DeferredReleases:
    """Running-lock releases that failed while the broker was away: lock name → owner jid."""

    def __init__(self) -> None:
        self._pending: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, name: str, owner: str) -> None:
        with self._lock:
            self._pending[name] = owner

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def retry(self, app: PluginHost) -> None:
        """Try each pending release once; stop at the first unavailability (try later)."""
        with self._lock:
            pending = list(self._pending.items())
        for name, owner in pending:
            try:
                app.broker.locks.release(name, owner)
            except BrokerUnavailableError:
                return
            except Exception:
                logger.exception("dropping the deferred release of cron lock %s (owner %s)",
                                 name, owner)
            with self._lock:
                if self._pending.get(name) == owner:
                    del self._pending[name]


def deferred_releases(app: PluginHostBase) -> DeferredReleases:
    """This app's deferred releases (created on first use, kept across reconfiguration)."""
    deferred = app.extras.get(EXTRA_KEY)
    if deferred is None:
        deferred = app.extras.setdefault(EXTRA_KEY, DeferredReleases())
    return cast("DeferredReleases", deferred)


CRON_FIELDS: Final = ("periodic_pjid",)
"""What a job a cron entry pushed carries: the hooks below skip every other job."""


def running_lock_of(job: Payload) -> tuple[str, str] | None:
    """(running lock name, owner jid) of a cron job; None for a job that is not one."""
    pjid, jid = job.get("periodic_pjid"), job.get("jid")
    if not isinstance(pjid, str) or not pjid or not isinstance(jid, str) or not jid:
        return None
    return running_lock_name(pjid), jid


# -- claim and rollback ------------------------------------------------------------------------


def claim_slot(app: PluginHost, entry: PeriodicEntry, slot: int, jid: str) -> ClaimResult:
    """Claim ``slot`` of ``entry`` for ``jid`` (see ``PeriodicStore.claim_slot``)."""
    return app.broker.periodic.claim_slot(entry.pjid, slot, jid,
                                          until_executed=entry.until_executed,
                                          slot_lock_ttl=SLOT_LOCK_TTL,
                                          running_ttl=queued_ttl(app))


def rollback_claim(
    app: PluginHost, entry: PeriodicEntry, slot: int, previous_slot: int | None, jid: str
) -> bool:
    """Undo a won claim; True when the last slot was put back."""
    return app.broker.periodic.rollback_claim(entry.pjid, slot, previous_slot, jid)


def retake_lock(app: PluginHost, job: Payload, ttl: float) -> bool:
    """Take the job's running lock if missing, refresh it if owned; False if another owns it."""
    target = running_lock_of(job)
    return target is not None and app.broker.locks.retake(target[0], target[1], ttl)


def touch_lock(app: PluginHost, job: Payload, wait: float | None) -> bool:
    """Set the job's running lock TTL if the job still owns it: the active TTL when it
    starts (``wait`` None), its retry wait plus the queued TTL while it waits."""
    target = running_lock_of(job)
    if target is None:
        return False
    ttl = float(active_ttl(app)) if wait is None else wait + queued_ttl(app)
    return app.broker.locks.extend(target[0], target[1], ttl)


def requeue_claim(app: PluginHostBase, job: Payload) -> LockClaim | None:
    """The running lock an ``until_executed`` run re-takes when it goes back on its queue,
    with the queued TTL; None for any other job."""
    target = running_lock_of(job)
    if target is None or job.get("periodic_until_executed") is not True:
        return None
    return LockClaim(target[0], target[1], float(queued_ttl(app)))


# -- hooks ----------------------------------------------------------------------------------


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    read_plugin_options(app.settings, PLUGIN_NAME, OPTIONS)  # a bad option stops start-up
    deferred_releases(app)


@hookimpl
def cogworker_claim_periodic_slot(
    app: PluginHost, entry: PeriodicEntry, slot: int, jid: str
) -> ClaimResult | None:
    return claim_slot(app, entry, slot, jid)


@hookimpl
def cogworker_rollback_periodic_claim(
    app: PluginHost, entry: PeriodicEntry, slot: int, previous_slot: int | None, jid: str
) -> bool | None:
    return rollback_claim(app, entry, slot, previous_slot, jid)


@hookimpl(for_jobs_with=CRON_FIELDS)
def cogworker_requeue_lock(app: PluginHost, job: Payload) -> LockClaim | None:
    return requeue_claim(app, job)


@hookimpl(for_jobs_with=CRON_FIELDS)
def cogworker_retake_periodic_lock(app: PluginHost, job: Payload, ttl: float) -> None:
    retake_lock(app, job, ttl)


@hookimpl(for_jobs_with=CRON_FIELDS)
def cogworker_touch_periodic_lock(app: PluginHost, job: Payload, wait: float | None) -> None:
    touch_lock(app, job, wait)


@hookimpl(for_jobs_with=CRON_FIELDS)
def cogworker_release_periodic_lock(app: PluginHost, job: Payload) -> None:
    target = running_lock_of(job)
    if target is None:
        return
    name, jid = target
    try:
        app.broker.locks.release(name, jid)
    except BrokerUnavailableError:
        deferred_releases(app).add(name, jid)
        logger.warning("could not release cron lock %s (owner %s): broker unavailable; "
                       "retrying after each heartbeat", name, jid)


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
                touch_lock(app, job, None)  # running: the active TTL
        except BrokerUnavailableError:
            return  # the next beat tries again
        except Exception:
            logger.exception("could not refresh the cron lock of jid=%s", job.get("jid"))


@hookimpl
def cogworker_shutdown(worker: WorkerHandle) -> None:
    """A last try at the deferred releases."""
    deferred_releases(worker.app).retry(worker.app)
