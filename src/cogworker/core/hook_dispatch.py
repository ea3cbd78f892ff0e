"""How the facade calls plugins: a firstresult hook without pluggy's dispatch cost, and
notification hooks that call each implementation on its own (an exception is logged with
the plugin's name and the other plugins still run). :class:`~cogworker.core.hooks.Hooks`
builds its typed methods on :class:`HookDispatch`."""

from __future__ import annotations

import logging
import operator
import os
from collections.abc import Callable, Mapping

import pluggy

from cogworker.core.errors import PluginError
from cogworker.core.markers import PAYLOAD_KEYS

logger = logging.getLogger("cogworker.core.hooks")  # the facade's name, as before the split
# Hook-call tracing has one logger, whichever module emits the line (see load_plugins).
trace_logger = logging.getLogger("cogworker.core.plugins")

_Call = tuple[Callable[..., object], Callable[[Mapping[str, object]], tuple[object, ...]],
              tuple[str, ...], str, "frozenset[str] | None"]
"""One implementation as :meth:`HookDispatch._notify` calls it: the function, what picks
its positional arguments, the names of its keyword arguments, the plugin's name, and the
payload keys it is for (``hookimpl(for_jobs_with=...)``; None: every call)."""

TRACE_ENV = "COGWORKER_TRACE_PLUGINS"

NOTIFICATION_HOOKS: frozenset[str] = frozenset(
    {
        "cogworker_startup",
        "cogworker_heartbeat",
        "cogworker_shutdown",
        "cogworker_job_retried",
        "cogworker_job_died",
        "cogworker_job_expired",
        "cogworker_job_cancelled",
        "cogworker_orphans_recovered",
        "cogworker_job_discarded",
        "cogworker_job_progress",
        "cogworker_jobs_deleted",
        "cogworker_extend_unique_lock",
        "cogworker_release_unique_lock",
        "cogworker_retake_periodic_lock",
        "cogworker_touch_periodic_lock",
        "cogworker_release_periodic_lock",
        "cogworker_periodic_fired",
    }
)


def tracing_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """True when ``COGWORKER_TRACE_PLUGINS`` asks for every hook call to be logged."""
    return environ.get(TRACE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def arm_addhooks(pm: pluggy.PluginManager) -> None:
    """Make the historic ``cogworker_addhooks`` call on a manager with no plugins yet.

    Each plugin registered afterwards gets the call as it registers, so specs it adds exist
    before ``check_pending`` validates its implementations.
    """
    pm.hook.cogworker_addhooks.call_historic(kwargs={"pluginmanager": pm})


class HookDispatch:
    """The plugin manager and the two ways of calling it that the facade uses."""

    def __init__(self, pm: pluggy.PluginManager, *, trace: bool | None = None) -> None:
        """Wrap ``pm``; raises :class:`PluginError` for a wrapper on a notification hook."""
        self._pm = pm
        self._trace = tracing_requested() if trace is None else trace
        self._plans: dict[str, tuple[list[pluggy.HookImpl], list[_Call] | None]] = {}
        _reject_notification_wrappers(pm)

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """The underlying manager, for listing and tests; call hooks through the facade."""
        return self._pm

    # -- dispatch ----------------------------------------------------------------------

    def _first_result(self, hook_name: str, **kwargs: object) -> object:
        """A firstresult hook as pluggy calls it: implementations in call order, the first
        result that is not None wins, exceptions propagate.

        Called directly because every push and every job runs one, and pluggy's dispatch
        cost more than the built-in unique plugin's check. With a wrapper registered, or
        tracing on, pluggy makes the call.
        """
        caller: pluggy.HookCaller = getattr(self._pm.hook, hook_name)
        calls = self._plan(hook_name, caller.get_hookimpls(), firstresult=True)
        if calls is None:
            return caller(**kwargs)
        job = _job_of(kwargs)
        for function, pick, _kwargnames, _plugin_name, keys in calls:
            if keys is not None and job is not None and keys.isdisjoint(job):
                continue
            result = function(*pick(kwargs))
            if result is not None:
                return result
        return None

    # -- isolation ---------------------------------------------------------------------

    def _notify(self, hook_name: str, **kwargs: object) -> None:
        """Call each implementation on its own, in pluggy call order (tryfirst first).

        Each gets only the arguments it declares, as pluggy would pass them.
        """
        impls = getattr(self._pm.hook, hook_name).get_hookimpls()
        job = _job_of(kwargs)
        for function, pick, kwargnames, plugin_name, keys in self._plan(hook_name, impls) or ():
            if keys is not None and job is not None and keys.isdisjoint(job):
                continue  # hookimpl(for_jobs_with=...): nothing to do for this job
            if self._trace:
                trace_logger.debug("hook %s: calling plugin %r", hook_name, plugin_name)
            try:
                if kwargnames:
                    function(*pick(kwargs), **{name: kwargs[name] for name in kwargnames
                                               if name in kwargs})
                else:
                    function(*pick(kwargs))
            except Exception:
                logger.exception(
                    "plugin %r raised in %s; the other plugins still run. Fix the plugin or "
                    "deactivate it with --plugin no:%s",
                    plugin_name,
                    hook_name,
                    plugin_name,
                )

    def _plan(self, hook_name: str, impls: list[pluggy.HookImpl], *,
              firstresult: bool = False) -> list[_Call] | None:
        """What to call for ``hook_name``, in call order, made again only when its
        implementations change (every job runs several hooks). None for a firstresult
        hook pluggy must call itself: tracing on, or a wrapper among them (a notification
        hook skips a wrapper: rejected at construction, only a late registration has one).
        """
        cached = self._plans.get(hook_name)
        if cached is not None and cached[0] == impls:
            return cached[1]
        wrapped = any(impl.wrapper or impl.hookwrapper for impl in impls)
        calls = None if firstresult and (self._trace or wrapped) else [
            (impl.function, _picker(tuple(impl.argnames)), tuple(impl.kwargnames),
             impl.plugin_name, getattr(impl.function, PAYLOAD_KEYS, None))
            for impl in reversed(impls) if not (impl.wrapper or impl.hookwrapper)]
        self._plans[hook_name] = (impls, calls)
        return calls


def _job_of(kwargs: Mapping[str, object]) -> dict[str, object] | None:
    """The payload a hook is called with, if any (what ``for_jobs_with`` keys are read in)."""
    job = kwargs.get("job")
    return job if isinstance(job, dict) else None


def _picker(names: tuple[str, ...]) -> Callable[[Mapping[str, object]], tuple[object, ...]]:
    """The positional arguments an implementation declares, picked from the call's keyword
    arguments (one C call for two or more, rather than a comprehension per call)."""
    if len(names) > 1:
        return operator.itemgetter(*names)
    if names:
        name = names[0]
        return lambda kwargs: (kwargs[name],)
    return lambda kwargs: ()


def _reject_notification_wrappers(pm: pluggy.PluginManager) -> None:
    for hook_name in sorted(NOTIFICATION_HOOKS):
        caller: pluggy.HookCaller | None = getattr(pm.hook, hook_name, None)
        for impl in caller.get_hookimpls() if caller is not None else ():
            if impl.wrapper or impl.hookwrapper:
                raise PluginError(
                    f"cogworker plugin {impl.plugin_name!r} implements the notification hook "
                    f"{hook_name} as a wrapper; notification hooks call each implementation "
                    "on its own, so there is nothing to wrap. Remove wrapper=True from it."
                )
