"""Hook specifications: periodic (cron) locks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from cogworker.core.payload import Payload
    from cogworker.core.periodic_types import ClaimResult, PeriodicEntry
    from cogworker.core.plugin_host import PluginHost

SECTION = "Periodic (cron) locks"
"""The title of these hooks in the hook reference."""


@hookspec(firstresult=True)
def cogworker_claim_periodic_slot(
    app: PluginHost, entry: PeriodicEntry, slot: int, jid: str
) -> ClaimResult | None:
    """Claim one cron slot for this process, atomically, fleet-wide.

    Called by every process's ticker for each due slot of each enabled entry.

    :param app: the application.
    :param entry: the cron entry.
    :param slot: the slot (epoch seconds of its fire time).
    :param jid: the jid the job will carry; ``until_executed`` locks are owned by it.

    Stops at the first non-None result.

    Failure policy: propagates (the ticker backs off that entry).

    Implemented by builtin: periodic-locks.

    Example::

        @cogworker.hookimpl
        def cogworker_claim_periodic_slot(app, entry, slot, jid):
            return ClaimResult(ClaimOutcome.WON, previous_slot=None)
    """


@hookspec(firstresult=True)
def cogworker_rollback_periodic_claim(
    app: PluginHost, entry: PeriodicEntry, slot: int, previous_slot: int | None, jid: str
) -> bool | None:
    """Undo a won claim whose push failed, so the slot fires on a later tick.

    :param app: the application.
    :param entry: the cron entry.
    :param slot: the slot that was claimed.
    :param previous_slot: the slot recorded before the claim (None if there was none).
    :param jid: the jid the claim was made for.

    Stops at the first non-None result: True when rolled back.

    Failure policy: propagates; the ticker keeps the rollback and retries it every tick.

    Implemented by builtin: periodic-locks.

    Example::

        @cogworker.hookimpl
        def cogworker_rollback_periodic_claim(app, entry, slot, previous_slot, jid):
            return store.rollback(entry.pjid, slot, previous_slot, jid)
    """


@hookspec
def cogworker_retake_periodic_lock(app: PluginHost, job: Payload, ttl: float) -> None:
    """Make sure a cron job's running lock is held by this job (set if missing).

    Called by the heartbeat for jobs being performed after an outage.

    :param app: the application.
    :param job: the payload; asked for every job, so an implementation checks its own
        fields (the built-in: ``periodic_pjid``).
    :param ttl: seconds.

    Failure policy: isolated.

    Implemented by builtin: periodic-locks.

    Example::

        @cogworker.hookimpl
        def cogworker_retake_periodic_lock(app, job, ttl):
            if "acme_cron" in job:  # asked for every job: only this plugin's cron runs
                app.broker.locks.retake(f"acme:cron:{job['acme_cron']}", job["jid"], ttl)
    """


@hookspec
def cogworker_touch_periodic_lock(app: PluginHost, job: Payload, wait: float | None) -> None:
    """Set a cron job's running lock TTL, owner-checked, when the job starts (``wait`` is
    None) or goes to wait ``wait`` seconds for a retry. The TTL is the plugin's to choose
    (the built-in: ``ceil(orphan_threshold + 120)`` while it runs, so a recovered run
    still finds its lock; the wait plus its ``queued_lock_ttl`` option, alias
    ``unique_lock_ttl``, while it waits).

    :param app: the application.
    :param job: the payload; asked for every job, so an implementation checks its own
        fields (the built-in: ``periodic_pjid``).
    :param wait: None when the job starts; else seconds until its retry is due.

    Failure policy: isolated.

    Implemented by builtin: periodic-locks.

    Example::

        @cogworker.hookimpl
        def cogworker_touch_periodic_lock(app, job, wait):
            if "acme_cron" in job:  # running: 10 minutes; waiting: the wait and 1 hour more
                ttl = 600.0 if wait is None else wait + 3600.0
                app.broker.locks.extend(f"acme:cron:{job['acme_cron']}", job["jid"], ttl)
    """


@hookspec
def cogworker_release_periodic_lock(app: PluginHost, job: Payload) -> None:
    """Release a cron job's running lock, owner-checked, when it finished for good.

    :param app: the application.
    :param job: the payload; asked for every job, so an implementation checks its own
        fields (the built-in: ``periodic_pjid``).

    Failure policy: isolated; failed releases are retried later by the implementation.

    Implemented by builtin: periodic-locks.

    Example::

        @cogworker.hookimpl
        def cogworker_release_periodic_lock(app, job):
            if "acme_cron" in job:
                app.broker.locks.release(f"acme:cron:{job['acme_cron']}", job["jid"])
    """


@hookspec
def cogworker_periodic_fired(app: PluginHost, entry: PeriodicEntry, slot: int,
                             lag: float) -> None:
    """This process won a cron slot's claim and pushed its job.

    Called by the ticker once per fired slot, fleet-wide (only the claim's winner calls
    it), after the push returned.

    :param app: the application.
    :param entry: the cron entry.
    :param slot: the slot (epoch seconds of its fire time).
    :param lag: how late the slot fired, in seconds: the ticker's clock at the tick that
        claimed it minus ``slot`` (a catch-up run after downtime is as late as the
        downtime).

    Failure policy: isolated.

    Implemented by builtin: metrics (the fleet's worst lag, ``cogworker_cron_tick_lag_seconds``).

    Example::

        @cogworker.hookimpl
        def cogworker_periodic_fired(app, entry, slot, lag):
            if lag > 30:
                app.logger("acme").warning("cron %s fired %.0fs late", entry.job_name, lag)
    """
