"""The typed facade over the plugin manager: the only caller of ``pm.hook``.

One method per hookspec in :mod:`cogworker.core.hookspecs`, with real types, so the engine
is type-checked although pluggy's relay is untyped. Each method applies its hook's failure
policy:

* decision hooks (fetcher, middleware, unique and periodic claims) let exceptions
  propagate to the engine, which decides;
* notification hooks (lifecycle, job events, lock upkeep) call each implementation on its
  own: an exception is logged with the plugin's name and the other plugins still run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

import pluggy

from cogworker.core.broker import scheme_owners
from cogworker.core.errors import PluginError
from cogworker.core.hook_dispatch import HookDispatch

if TYPE_CHECKING:
    from pathlib import Path

    from starlette.requests import Request
    from starlette.responses import Response

    from cogworker.core.broker import Broker, BrokerSchemes, Fetcher, LockClaim
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.job_options import JobOption
    from cogworker.core.middleware import ClientMiddleware, ServerMiddleware, StartGate
    from cogworker.core.payload import Payload
    from cogworker.core.periodic_types import ClaimResult, PeriodicEntry
    from cogworker.core.plugin_host import PluginHost
    from cogworker.core.settings import Settings


class Hooks(HookDispatch):
    """Typed calls into the active plugins. Build one per process from the manager."""

    @classmethod
    def from_settings(cls, fetch: str, changes: Sequence[str],
                      settings: Settings | None = None) -> Hooks:
        """Discover, resolve and load the plugins for ``fetch`` and ``changes``.

        ``fetch`` and ``changes`` are ``Settings.fetch`` and ``Settings.plugins``; with
        ``settings`` an unknown plugin's error names the source that named it. Raises the
        :class:`PluginError` subclasses of :mod:`cogworker.core.plugins`.
        """
        # plugins imports this module (arm_addhooks); importing it here avoids the cycle.
        from cogworker.core import plugins

        catalog = plugins.discover()
        active = plugins.resolve_active(catalog, fetch, changes, settings)
        return cls(plugins.load_plugins(catalog, active))

    # -- set-up ------------------------------------------------------------------------

    def configure(self, app: PluginHost) -> None:
        """``cogworker_configure`` (historic: plugins registered later get it too)."""
        self._pm.hook.cogworker_configure.call_historic(kwargs={"app": app})

    def job_options(self) -> list[tuple[str, list[JobOption | str]]]:
        """``cogworker_job_options`` of each active plugin: ``(plugin name, options)``,
        in pluggy call order; plugins that return None are left out. Propagates."""
        caller: pluggy.HookCaller = self._pm.hook.cogworker_job_options
        declared: list[tuple[str, list[JobOption | str]]] = []
        for impl in reversed(caller.get_hookimpls()):
            result = cast("Sequence[JobOption | str] | None", impl.function())
            if result is not None:
                declared.append((impl.plugin_name, list(result)))
        return declared

    # -- broker ------------------------------------------------------------------------

    def broker_schemes(self) -> dict[str, str]:
        """``cogworker_broker_schemes`` of every active plugin: URL scheme → the plugin that
        owns it (``""`` for the one answering without a URL). Propagates; raises
        :class:`~cogworker.core.errors.PluginConflictError` when two plugins claim one."""
        caller: pluggy.HookCaller = self._pm.hook.cogworker_broker_schemes
        declared: list[tuple[str, BrokerSchemes]] = []
        for impl in reversed(caller.get_hookimpls()):
            result = cast("BrokerSchemes | None", impl.function())
            if result is not None:
                declared.append((impl.plugin_name, result))
        return scheme_owners(declared)

    def make_broker(self, settings: Settings, project_dir: Path,
                    may_start_server: bool) -> Broker | None:
        """``cogworker_make_broker``: the first plugin's broker, or None when no active
        plugin owns the URL's scheme (the caller turns that into the error naming them).
        Propagates."""
        broker = self._pm.hook.cogworker_make_broker(
            settings=settings, project_dir=project_dir, may_start_server=may_start_server)
        return cast("Broker | None", broker)

    # -- fetch strategy ----------------------------------------------------------------

    def make_fetcher(self, app: PluginHost, broker: Broker) -> Fetcher:
        """``cogworker_make_fetcher``; raises :class:`PluginError` when none is active."""
        fetcher = self._pm.hook.cogworker_make_fetcher(app=app, broker=broker)
        if fetcher is None:
            raise PluginError(
                "no fetch strategy is active: no active plugin implements "
                "cogworker_make_fetcher; activate one with --plugin basic or --plugin reliable"
            )
        return cast("Fetcher", fetcher)

    def requeue_lock(self, app: PluginHost, job: Payload) -> LockClaim | None:
        """``cogworker_requeue_lock``: the lock to re-take with a requeue of ``job``, or
        None. Propagates (the fetch strategy logs it and requeues without a lock)."""
        result = self._first_result("cogworker_requeue_lock", app=app, job=job)
        return cast("LockClaim | None", result)

    # -- middleware --------------------------------------------------------------------

    def client_middleware(self, app: PluginHost) -> list[ClientMiddleware]:
        """Client middleware in pluggy call order (first = outermost); None dropped."""
        results = self._pm.hook.cogworker_client_middleware(app=app)
        return [cast("ClientMiddleware", item) for item in results if item is not None]

    def server_middleware(self, app: PluginHost) -> list[ServerMiddleware]:
        """Server middleware in pluggy call order (first = outermost); None dropped."""
        results = self._pm.hook.cogworker_server_middleware(app=app)
        return [cast("ServerMiddleware", item) for item in results if item is not None]

    def start_gate(self, app: PluginHost) -> list[StartGate]:
        """The start gates in pluggy call order; None dropped."""
        results = self._pm.hook.cogworker_start_gate(app=app)
        return [cast("StartGate", item) for item in results if item is not None]

    # -- unique jobs -------------------------------------------------------------------

    def acquire_unique_lock(self, app: PluginHost, job: Payload) -> bool | None:
        """True: store the job; False: a duplicate; None: not a unique job. Propagates."""
        result = self._first_result("cogworker_acquire_unique_lock", app=app, job=job)
        return cast("bool | None", result)

    def unique_job_starting(self, app: PluginHost, job: Payload) -> bool | None:
        """False: another copy runs, reschedule; True or None: run it. Propagates."""
        result = self._first_result("cogworker_unique_job_starting", app=app, job=job)
        return cast("bool | None", result)

    def extend_unique_lock(self, app: PluginHost, job: Payload, wait: float) -> None:
        """Notification: keep a retrying job's uniqueness lock over its ``wait``."""
        self._notify("cogworker_extend_unique_lock", app=app, job=job, wait=wait)

    def release_unique_lock(self, app: PluginHost, job: Payload, reason: str) -> None:
        """Notification: release a job's uniqueness lock, owner-checked."""
        self._notify("cogworker_release_unique_lock", app=app, job=job, reason=reason)

    # -- periodic locks ----------------------------------------------------------------

    def claim_periodic_slot(
        self, app: PluginHost, entry: PeriodicEntry, slot: int, jid: str
    ) -> ClaimResult | None:
        """Claim one cron slot fleet-wide; None when no plugin claims. Propagates."""
        result = self._pm.hook.cogworker_claim_periodic_slot(
            app=app, entry=entry, slot=slot, jid=jid
        )
        return cast("ClaimResult | None", result)

    def rollback_periodic_claim(
        self, app: PluginHost, entry: PeriodicEntry, slot: int, previous_slot: int | None, jid: str
    ) -> bool | None:
        """Undo a won claim whose push failed; True when rolled back. Propagates."""
        result = self._pm.hook.cogworker_rollback_periodic_claim(
            app=app, entry=entry, slot=slot, previous_slot=previous_slot, jid=jid
        )
        return cast("bool | None", result)

    def retake_periodic_lock(self, app: PluginHost, job: Payload, ttl: float) -> None:
        """Notification: set a cron job's running lock if it is missing."""
        self._notify("cogworker_retake_periodic_lock", app=app, job=job, ttl=ttl)

    def touch_periodic_lock(self, app: PluginHost, job: Payload, wait: float | None) -> None:
        """Notification: refresh a cron job's running lock, owner-checked (``wait`` None:
        the job starts; else the seconds it waits for a retry)."""
        self._notify("cogworker_touch_periodic_lock", app=app, job=job, wait=wait)

    def release_periodic_lock(self, app: PluginHost, job: Payload) -> None:
        """Notification: release a cron job's running lock, owner-checked."""
        self._notify("cogworker_release_periodic_lock", app=app, job=job)

    def periodic_fired(self, app: PluginHost, entry: PeriodicEntry, slot: int,
                       lag: float) -> None:
        """Notification: this process pushed the job of a cron slot it claimed."""
        self._notify("cogworker_periodic_fired", app=app, entry=entry, slot=slot, lag=lag)

    # -- lifecycle ---------------------------------------------------------------------

    def startup(self, worker: WorkerHandle) -> None:
        """Notification: the worker passed its first heartbeat."""
        self._notify("cogworker_startup", worker=worker)

    def heartbeat(self, worker: WorkerHandle) -> None:
        """Notification: a heartbeat succeeded."""
        self._notify("cogworker_heartbeat", worker=worker)

    def shutdown(self, worker: WorkerHandle) -> None:
        """Notification: the worker drained and is about to exit."""
        self._notify("cogworker_shutdown", worker=worker)

    # -- job events --------------------------------------------------------------------

    def job_retried(self, app: PluginHost, job: Payload, exception: BaseException,
                    delay: float) -> None:
        """Notification: a failed job was written to the retry set."""
        self._notify("cogworker_job_retried", app=app, job=job, exception=exception, delay=delay)

    def job_died(self, app: PluginHost, job: Payload, exception: BaseException) -> None:
        """Notification: a job was moved to the dead set."""
        self._notify("cogworker_job_died", app=app, job=job, exception=exception)

    def before_ack(self, app: PluginHost, raws: Sequence[str]) -> None:
        """Finished jobs are about to be acknowledged. Propagates (they stay unacked)."""
        caller: pluggy.HookCaller = self._pm.hook.cogworker_before_ack
        if raws and caller.get_hookimpls():
            caller(app=app, raws=list(raws))

    def job_expired(self, app: PluginHost, job: Payload, late: float) -> None:
        """Notification: a fetched job was dropped, its ``expires_at`` passed."""
        self._notify("cogworker_job_expired", app=app, job=job, late=late)

    def job_cancelled(self, app: PluginHost, job: Payload, when: str) -> None:
        """Notification: a job was cancelled (``before_start`` or ``while_running``)."""
        self._notify("cogworker_job_cancelled", app=app, job=job, when=when)

    def orphans_recovered(self, app: PluginHost, identity: str, count: int,
                          jobs: Sequence[Payload] = ()) -> None:
        """Notification: a dead process's in-progress jobs were requeued."""
        self._notify("cogworker_orphans_recovered", app=app, identity=identity, count=count,
                     jobs=list(jobs))

    def job_discarded(self, app: PluginHost, job: Payload, exception: BaseException) -> None:
        """Notification: a failed job was discarded (``retry_in`` said so)."""
        self._notify("cogworker_job_discarded", app=app, job=job, exception=exception)

    def job_progress(self, app: PluginHost, job: Payload, pct: float | None,
                     message: str | None, fields: Mapping[str, str]) -> None:
        """Notification: a running job reported progress or stored fields."""
        self._notify("cogworker_job_progress", app=app, job=job, pct=pct, message=message,
                     fields=fields)

    def jobs_deleted(self, app: PluginHost, jids: Sequence[str], source: str) -> None:
        """Notification: jobs were deleted through the API."""
        if jids:
            self._notify("cogworker_jobs_deleted", app=app, jids=list(jids), source=source)

    def wants_jobs_deleted(self) -> bool:
        """Whether an active plugin implements ``cogworker_jobs_deleted`` (a clear reads
        the jids it deletes only then)."""
        caller: pluggy.HookCaller = self._pm.hook.cogworker_jobs_deleted
        return bool(caller.get_hookimpls())

    # -- web dashboard -----------------------------------------------------------------

    def web_tabs(self, app: PluginHost) -> list[object]:
        """``cogworker_web_tabs``: every tab of every active plugin (the dashboard checks
        each is a :class:`cogworker.web.Tab`). Propagates."""
        results = self._pm.hook.cogworker_web_tabs(app=app)
        return [tab for result in results for tab in (result or ())]

    def web_authorize(self, app: PluginHost, request: Request,
                      action: str) -> bool | Response | None:
        """``cogworker_web_authorize``: False if any plugin refuses, else the first
        Response, else True if any allows, else None. Propagates."""
        results = self._pm.hook.cogworker_web_authorize(app=app, request=request,
                                                        action=action)
        if any(result is False for result in results):
            return False
        answer = next((r for r in results if not isinstance(r, bool)), None)
        if answer is not None:
            return cast("Response", answer)
        return True if any(result is True for result in results) else None

    def web_authorizers(self) -> list[str]:
        """Names of the active plugins that implement ``cogworker_web_authorize``."""
        caller: pluggy.HookCaller = self._pm.hook.cogworker_web_authorize
        return [impl.plugin_name for impl in caller.get_hookimpls()]
