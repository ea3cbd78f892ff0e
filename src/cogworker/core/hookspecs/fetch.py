"""Hook specifications: fetch strategy (an exclusive slot)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from cogworker.core.broker import Broker, Fetcher, LockClaim
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

SECTION = "Fetch strategy (an exclusive slot)"
"""The title of these hooks in the hook reference."""


@hookspec(firstresult=True)
def cogworker_make_fetcher(app: PluginHost, broker: Broker) -> Fetcher | None:
    """Build the fetcher a worker process takes jobs with.

    Called once per worker process at start-up, and again by the engine if the fetcher it
    made reports the server cannot support it.

    :param app: the application.
    :param broker: the broker; Redis-aware fetchers check for ``RedisBroker``.

    Stops at the first non-None result.

    Ordering: ``basic`` is ``trylast``, so any other active fetcher wins. Two active
    fetchers that are not ``trylast`` are a start-up error naming both.

    Failure policy: propagates.

    Implemented by builtin: basic (trylast), reliable.

    Example::

        @cogworker.hookimpl
        def cogworker_make_fetcher(app, broker):
            return MyFetcher(broker)
    """


@hookspec(firstresult=True)
def cogworker_requeue_lock(app: PluginHost, job: Payload) -> LockClaim | None:
    """Name the lock to re-take when ``job`` goes back on its queue.

    Asked by the fetch strategy for each job a requeue puts back (a job handed back, a
    shutdown, an orphan recovery); the broker re-takes the lock in the same atomic step as
    the requeue (missing: set to its owner; the owner's: TTL refreshed; anyone else's: left
    alone), so a requeued job keeps what its plugin guards with that lock.

    :param app: the application.
    :param job: the payload about to be requeued.

    Stops at the first non-None result: a :class:`cogworker.core.broker.LockClaim` (lock
    name, owner, TTL), or None for no lock. One lock per job.

    Failure policy: propagates to the fetch strategy, which logs it and requeues the job
    without a lock (a requeue is never refused).

    Implemented by builtin: ``periodic-locks`` (an ``until_executed`` cron run re-takes its
    running lock, with the queued TTL: ``unique_lock_ttl`` rounded up).

    Example::

        from cogworker.core.broker import LockClaim

        @cogworker.hookimpl
        def cogworker_requeue_lock(app, job):
            if not job.get("acme_exclusive"):
                return None
            return LockClaim(f"acme:{job['acme_exclusive']}", job["jid"], ttl=3600)
    """
