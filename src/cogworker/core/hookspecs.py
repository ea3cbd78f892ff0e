"""Every cogworker hook specification. The only spec module.

Plugins implement these with ``@cogworker.hookimpl``. The engine never calls ``pm.hook``
itself: :class:`cogworker.core.hooks.Hooks` is the typed facade and the only caller.

Failure policy, stated per hook: *decision* hooks (fetcher, locks, claims) propagate
exceptions to the engine, which decides; *notification* hooks (lifecycle, job events) are
isolated: an exception is logged with the plugin's name and the other plugins still run.

Hooks evolve by adding arguments only: an implementation may accept any subset of a spec's
arguments, so existing plugins keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import pluggy
    from starlette.requests import Request
    from starlette.responses import Response

    from cogworker.core.broker import Broker, BrokerSchemes, Fetcher, LockClaim
    from cogworker.core.job_options import JobOption
    from cogworker.core.middleware import ClientMiddleware, ServerMiddleware
    from cogworker.core.payload import Payload
    from cogworker.core.periodic_types import ClaimResult, PeriodicEntry
    from cogworker.core.plugin_host import PluginHost
    from cogworker.core.settings import Settings


class WorkerHandle(Protocol):
    """What a plugin sees of a running worker process in lifecycle hooks."""

    @property
    def identity(self) -> str:
        """The worker process's identity."""
        ...

    @property
    def app(self) -> PluginHost:
        """The application the worker runs."""
        ...

    @property
    def settings(self) -> Settings: ...

    def performing_jobs(self) -> list[Payload]:
        """Payloads whose ``perform`` has started and not yet returned."""
        ...


# --------------------------------------------------------------------------------------
# Set-up
# --------------------------------------------------------------------------------------


@hookspec(historic=True)
def cogworker_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Add new hook specifications from a plugin.

    Called once per plugin manager, also for plugins registered later (historic).

    :param pluginmanager: the manager; call ``pluginmanager.add_hookspecs(module)``.

    Failure policy: propagates (a broken spec module must stop start-up).

    Implemented by builtin: none.

    Example::

        @cogworker.hookimpl
        def cogworker_addhooks(pluginmanager):
            pluginmanager.add_hookspecs(my_hookspecs)
    """


@hookspec(historic=True)
def cogworker_configure(app: PluginHost) -> None:
    """The app's settings are final; read your plugin options here.

    Called once per app, after plugins are activated (historic: late plugins see it too).

    :param app: the application; ``app.settings.plugin_options.get("myplugin", {})``.

    Failure policy: propagates (a plugin that cannot configure itself stops start-up).

    Implemented by builtin: unique, periodic-locks (read their TTLs).

    Example::

        @cogworker.hookimpl
        def cogworker_configure(app):
            app.extras["acme"] = AcmeOptions(**app.settings.plugin_options.get("acme", {}))
    """


@hookspec
def cogworker_job_options() -> Sequence[JobOption | str] | None:
    """Declare the job options this plugin reads from payloads or job definitions.

    Called when an app first checks a job's options: at ``@app.job`` (and ``.set()``) for
    the plugins the app's settings activate, and again once ``cogworker`` applied its
    command-line flags. A job may only use declared options, so a misspelt one is an error
    with a did-you-mean where it is written. Options of a plugin deactivated by name
    (``--plugin no:NAME``) stay accepted, and nothing reads them.

    Returns :class:`cogworker.JobOption` objects (a name, the accepted values in words, and
    a ``check`` that returns True for a valid value) or bare names (any JSON value), or
    None. A callable value (``unique_args``) stays on the job's definition
    (``definition.local_options``); any other value is copied into every payload.

    Failure policy: propagates. One name declared by two plugins, or by a plugin and
    cogworker (``queue``, ``retry``, ``backtrace``), is an error naming both.

    Implemented by builtin: unique (``unique``, ``unique_for``, ``unique_args``).

    Example::

        @cogworker.hookimpl
        def cogworker_job_options():
            return [cogworker.JobOption("tenant", "a tenant slug", lambda v: isinstance(v, str))]
    """


# --------------------------------------------------------------------------------------
# Broker (chosen by URL scheme)
# --------------------------------------------------------------------------------------


@hookspec
def cogworker_broker_schemes() -> BrokerSchemes | None:
    """Declare the broker URL schemes this plugin builds brokers for.

    Called when the broker is chosen, and by ``cogworker plugins`` and error messages,
    which name every active broker plugin with its schemes.

    Returns a :class:`cogworker.core.broker.BrokerSchemes`: the schemes without ``://``
    (``("redis", "rediss", "unix")``) and whether the plugin also answers when no URL is
    set (``without_url=True``: the built-in ``redis``, which then runs a private
    redis-server); or None for a plugin that builds no broker.

    Failure policy: propagates. A scheme (or "no URL") claimed by two active plugins is an
    error naming both.

    Implemented by builtin: ``redis`` (``redis``, ``rediss``, ``unix``, the ``+sentinel``
    and ``+cluster`` schemes, and "no URL": the private redis-server).

    Example::

        from cogworker.core.broker import BrokerSchemes

        @cogworker.hookimpl
        def cogworker_broker_schemes():
            return BrokerSchemes(("acme", "acmes"))
    """


@hookspec(firstresult=True)
def cogworker_make_broker(settings: Settings, project_dir: Path,
                          may_start_server: bool) -> Broker | None:
    """Build the broker for the configured URL, if this plugin owns its scheme.

    Asked when an app's broker is first needed (not before: building one never needs a
    connection, but a command that never touches the store never asks).

    :param settings: the final settings; the URL is ``settings.redis_url`` (None: unset).
    :param project_dir: the project folder; a broker that runs a local server keeps its
        data under it.
    :param may_start_server: False for commands that only look (``cogworker stats``): the
        broker must not start a local server then, only use one that already runs.

    Stops at the first non-None result. Each broker plugin answers for the schemes it
    declares (:func:`cogworker_broker_schemes`; see
    :func:`cogworker.core.broker.url_scheme`) and returns None otherwise. A URL no active
    plugin answers for is a ``ConfigurationError`` naming the active broker plugins and
    their schemes.

    Failure policy: propagates (a broker that cannot be built stops the command).

    Implemented by builtin: ``redis`` (a ``RedisBroker`` for its schemes and for no URL).

    Example::

        from cogworker.core.broker import url_scheme

        @cogworker.hookimpl
        def cogworker_make_broker(settings):
            if url_scheme(settings.redis_url) not in ("acme", "acmes"):
                return None
            return AcmeBroker(settings.redis_url, namespace=settings.namespace)
    """


# --------------------------------------------------------------------------------------
# Fetch strategy (an exclusive slot)
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Middleware
# --------------------------------------------------------------------------------------


@hookspec
def cogworker_client_middleware(app: PluginHost) -> ClientMiddleware | None:
    """Contribute a middleware around every push.

    Called once per app when the client chain is first built.

    :param app: the application.

    Returns a callable ``(ctx, call_next) -> jid | None`` or None. Results are collected
    in pluggy call order (``tryfirst`` first); the first is the outermost wrapper. A
    middleware that does not call ``call_next()`` stops the push: nothing is stored.

    Failure policy: propagates (an exception in the chain fails the push).

    Implemented by builtin: none (unique locks have their own hooks, called first).

    Example::

        @cogworker.hookimpl
        def cogworker_client_middleware(app):
            def stamp(ctx, call_next):
                ctx.job["tenant"] = current_tenant()
                return call_next()
            return stamp
    """


@hookspec
def cogworker_server_middleware(app: PluginHost) -> ServerMiddleware | None:
    """Contribute a middleware around every job run.

    Called once per worker when the server chain is first built.

    :param app: the application.

    Returns a callable ``(ctx, call_next) -> object`` or None; collected like
    :func:`cogworker_client_middleware`. A middleware that does not call ``call_next()``
    skips the job, which then counts as processed.

    Failure policy: an exception from a middleware is the job's failure (retry/dead).

    Implemented by builtin: none.

    Example::

        @cogworker.hookimpl
        def cogworker_server_middleware(app):
            def timed(ctx, call_next):
                started = time.monotonic()
                try:
                    return call_next()
                finally:
                    metrics.observe(ctx.job["class"], time.monotonic() - started)
            return timed
    """


# --------------------------------------------------------------------------------------
# Unique jobs
# --------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def cogworker_acquire_unique_lock(app: PluginHost, job: Payload) -> bool | None:
    """Take the uniqueness lock for a job about to be pushed.

    Called for every push (immediate, scheduled, bulk) before the client middleware.

    :param app: the application.
    :param job: the normalized payload (has its jid).

    Stops at the first non-None result. True: go on and store the job. False: a duplicate;
    nothing is stored and ``perform_async`` returns None. None: not a unique job.

    Failure policy: propagates (the push fails; nothing is stored).

    Implemented by builtin: unique.

    Example::

        @cogworker.hookimpl
        def cogworker_acquire_unique_lock(app, job):
            if job.get("unique"):
                return locks.acquire(digest(job), job["jid"], ttl=3600)
            return None
    """


@hookspec(firstresult=True)
def cogworker_unique_job_starting(app: PluginHost, job: Payload) -> bool | None:
    """A unique job is about to run; may it?

    Called by the processor before the server chain, for every job.

    :param app: the application.
    :param job: the payload.

    Stops at the first non-None result. False: not now (another copy runs); the engine puts
    the job back on the schedule a few seconds ahead. True or None: run it.

    Failure policy: propagates; the engine then runs the job (never loses it) and logs.

    Implemented by builtin: unique (``while_executing``; releases ``until_executing``).

    Example::

        @cogworker.hookimpl
        def cogworker_unique_job_starting(app, job):
            return None
    """


@hookspec
def cogworker_extend_unique_lock(app: PluginHost, job: Payload, ttl: float) -> None:
    """Keep a job's uniqueness lock while it waits for a retry.

    Called after the job was written to the retry set, owner-checked by the implementation.

    :param app: the application.
    :param job: the payload as stored in retry.
    :param ttl: seconds to keep it (retry delay + ``unique_lock_ttl``).

    Failure policy: isolated (logged; the job's fate does not change).

    Implemented by builtin: unique.

    Example::

        @cogworker.hookimpl
        def cogworker_extend_unique_lock(app, job, ttl):
            locks.extend(digest(job), job["jid"], ttl)
    """


@hookspec
def cogworker_release_unique_lock(app: PluginHost, job: Payload, reason: str) -> None:
    """Release a job's uniqueness lock, owner-checked.

    Called when the job succeeded or failed for good (``reason`` is one of ``success``,
    ``dead``, ``killed``, ``discarded``, ``orphaned``), or for ``until_executing`` jobs when
    it starts (``started``).

    :param app: the application.
    :param job: the payload.
    :param reason: why the lock is released.

    Failure policy: isolated; an implementation should retry releases that failed because
    the store was unavailable (the builtin does so on later heartbeats and at shutdown).

    Implemented by builtin: unique.

    Example::

        @cogworker.hookimpl
        def cogworker_release_unique_lock(app, job, reason):
            locks.release(digest(job), job["jid"])
    """


# --------------------------------------------------------------------------------------
# Periodic (cron) locks
# --------------------------------------------------------------------------------------


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
    :param job: a payload with ``periodic_pjid``.
    :param ttl: seconds.

    Failure policy: isolated.

    Implemented by builtin: periodic-locks.

    Example::

        @cogworker.hookimpl
        def cogworker_retake_periodic_lock(app, job, ttl):
            ...
    """


@hookspec
def cogworker_touch_periodic_lock(app: PluginHost, job: Payload, ttl: float) -> None:
    """Set a cron job's running lock TTL, owner-checked (start, heartbeat, retry wait).

    :param app: the application.
    :param job: a payload with ``periodic_pjid``.
    :param ttl: seconds.

    Failure policy: isolated.

    Implemented by builtin: periodic-locks.

    Example::

        @cogworker.hookimpl
        def cogworker_touch_periodic_lock(app, job, ttl):
            ...
    """


@hookspec
def cogworker_release_periodic_lock(app: PluginHost, job: Payload) -> None:
    """Release a cron job's running lock, owner-checked, when it finished for good.

    :param app: the application.
    :param job: a payload with ``periodic_pjid``.

    Failure policy: isolated; failed releases are retried later by the implementation.

    Implemented by builtin: periodic-locks.

    Example::

        @cogworker.hookimpl
        def cogworker_release_periodic_lock(app, job):
            ...
    """


# --------------------------------------------------------------------------------------
# Lifecycle
# --------------------------------------------------------------------------------------


@hookspec
def cogworker_startup(worker: WorkerHandle) -> None:
    """A worker process passed its first heartbeat and is about to fetch.

    :param worker: the running worker.

    Failure policy: isolated.

    Implemented by builtin: none.

    Example::

        @cogworker.hookimpl
        def cogworker_startup(worker):
            log.info("worker %s up", worker.identity)
    """


@hookspec
def cogworker_heartbeat(worker: WorkerHandle) -> None:
    """Called after each successful heartbeat (every ``heartbeat_interval`` seconds).

    :param worker: the running worker.

    Failure policy: isolated; a failing implementation never fails the beat.

    Implemented by builtin: unique, periodic-locks (retry deferred releases, keep locks).

    Example::

        @cogworker.hookimpl
        def cogworker_heartbeat(worker):
            ...
    """


@hookspec
def cogworker_shutdown(worker: WorkerHandle) -> None:
    """The worker has drained (or given up waiting) and is about to exit.

    :param worker: the stopping worker.

    Failure policy: isolated.

    Implemented by builtin: unique, periodic-locks (a last try at deferred releases).

    Example::

        @cogworker.hookimpl
        def cogworker_shutdown(worker):
            ...
    """


# --------------------------------------------------------------------------------------
# Job events
# --------------------------------------------------------------------------------------


@hookspec
def cogworker_job_retried(app: PluginHost, job: Payload, exception: BaseException,
                          delay: float) -> None:
    """A failed job was written to the retry set.

    :param app: the application.
    :param job: the payload as stored.
    :param exception: what the job raised.
    :param delay: seconds until it runs again.

    Failure policy: isolated.

    Implemented by builtin: none.

    Example::

        @cogworker.hookimpl
        def cogworker_job_retried(app, job, exception, delay):
            ...
    """


@hookspec
def cogworker_job_died(app: PluginHost, job: Payload, exception: BaseException) -> None:
    """A job was moved to the dead set (out of retries, killed, or orphaned too often).

    Called once per death, by the process whose write put it there, after the death
    handlers of the app.

    :param app: the application.
    :param job: a copy of the payload as stored in dead.
    :param exception: the job's exception, or ``JobFailedError``/``JobOrphanedError``.

    Failure policy: isolated.

    Implemented by builtin: none (the engine releases locks itself before this).

    Example::

        @cogworker.hookimpl
        def cogworker_job_died(app, job, exception):
            alert(job["class"], exception)
    """


@hookspec
def cogworker_orphans_recovered(app: PluginHost, identity: str, count: int) -> None:
    """Jobs left in progress by a dead process were put back on their queues.

    :param app: the application.
    :param identity: the dead process.
    :param count: how many jobs.

    Failure policy: isolated.

    Implemented by builtin: none.

    Example::

        @cogworker.hookimpl
        def cogworker_orphans_recovered(app, identity, count):
            ...
    """


# --------------------------------------------------------------------------------------
# Web dashboard
# --------------------------------------------------------------------------------------


@hookspec
def cogworker_web_tabs(app: PluginHost) -> Sequence[object] | None:
    """Add tabs, and the routes behind them, to the dashboard.

    Called once when the dashboard is built (:func:`cogworker.web.create_app`), before it
    serves a request. The built-in tabs come through this hook too, so a plugin's tab is
    in every way a peer of Overview or Jobs.

    :param app: the application the dashboard shows.

    Return a list of :class:`cogworker.web.Tab` (or None). The navigation lists every tab
    by its ``order`` (built-ins use 10 to 50; the default 100 puts a plugin's tab after
    them), then its label. Routes are mounted under the dashboard's prefix; a tab name
    claimed twice is an error naming both.

    Failure policy: propagates (the dashboard does not start with a broken tab).

    Implemented by builtin: web-tabs (Overview, Jobs, Schedules, Workers, Locks), which
    the dashboard registers itself when it is built.

    Example::

        from starlette.routing import Route
        from cogworker.web import Tab, dashboard

        def slow_jobs(request):
            return dashboard(request).render(request, "slow/index.html", {"rows": ...})

        @cogworker.hookimpl
        def cogworker_web_tabs(app):
            return [Tab("slow", "Slow jobs", [Route("/slow", slow_jobs)],
                        templates=Path(__file__).parent / "templates")]
    """


@hookspec
def cogworker_web_authorize(app: PluginHost, request: Request,
                            action: str) -> bool | Response | None:
    """Decide whether a dashboard request may go on: authentication and roles.

    Called for every request but static assets, with ``action`` ``"view"`` for GET, HEAD
    and OPTIONS and ``"act"`` for anything that changes state; for pages also once with
    ``"act"`` to decide whether to show the action buttons (a read-only role sees none).
    Runs on a worker thread, so it may read a session store or call an identity provider.

    :param app: the application the dashboard shows.
    :param request: the Starlette request (headers, cookies, client address, path).
    :param action: ``"view"`` or ``"act"``.

    Return True to allow, False to refuse (403, or no buttons), a Starlette ``Response``
    to send instead (e.g. a redirect to your login page), or None for no opinion. Every
    implementation is asked: any False wins, then the first Response; when all say None the
    request goes on. ``cogworker web`` refuses a non-loopback address unless some active
    plugin implements this hook.

    Failure policy: propagates: the request fails with 500 and is never let through.

    Implemented by builtin: none.

    Example::

        @cogworker.hookimpl
        def cogworker_web_authorize(app, request, action):
            user = request.headers.get("X-Forwarded-User")  # set by the auth proxy
            if user is None:
                return False
            return action == "view" or user in ADMINS
    """


ALL_HOOKS: tuple[str, ...] = tuple(sorted(n for n in dir() if n.startswith("cogworker_")))
