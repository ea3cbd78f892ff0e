"""Plugin ``cancel``: cancelled jobs never start, and running ones are told to stop.

``app.cancel(jid)`` and ``cogworker cancel JID`` (:mod:`cogworker.api.cancel`) record the
cancellation on the broker (``broker.extension(CANCELLATIONS)``), kept
``plugin_options.cancel.ttl`` seconds (24 h), and remove a waiting job in the same step.
This plugin is the workers' side, written only against hooks:

* ``cogworker_startup`` loads every live cancellation into memory and starts the
  :class:`~cogworker.plugins.cancel.watch.CancelWatch` thread (announcements, and a re-read
  every ``refresh_interval`` seconds as the backstop);
* a **start gate** (``cogworker_start_gate``) drops a fetched job whose jid was cancelled:
  logged, its locks released, ``cogworker_job_cancelled(..., "before_start")``, settled
  without running (never retried, never dead). A dictionary look-up: no broker command;
* a **server middleware** gives each run a
  :class:`~cogworker.core.cancel_signal.CancelSignal`: when its jid is cancelled the run is
  told (``job.cancelled()``, the task of an ``async def`` job cancelled, ``JobCancelled``
  raised in the thread of a sync job with ``cancel="raise"``), and the run, however it
  ends, is settled as cancelled (``JobCancelled``: the worker calls
  ``cogworker_job_cancelled(..., "while_running")``).

A broker without the facet gets one warning at start-up and the plugin stays idle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, cast

from cogworker.core.broker import CANCELLATIONS
from cogworker.core.cancel_signal import CancelSignal, enter_signal, leave_signal
from cogworker.core.errors import JobCancelled
from cogworker.core.job_options import JobOption
from cogworker.core.markers import hookimpl
from cogworker.plugins.cancel.options import PLUGIN_NAME, CancelOptions, is_cancel_mode

if TYPE_CHECKING:
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.middleware import JobContext, ServerMiddleware, StartGate
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost, PluginHostBase
    from cogworker.plugins.cancel.watch import CancelWatch

logger = logging.getLogger("cogworker.cancel")

WATCH_KEY: Final = f"{PLUGIN_NAME}:watch"
"""Where this app's :class:`CancelWatch` lives in ``app.extras``."""


def options_of(app: PluginHostBase) -> CancelOptions:
    """This app's checked options (parsed at configure, or now if configure has not run)."""
    options = app.extras.get(PLUGIN_NAME)
    if not isinstance(options, CancelOptions):
        options = CancelOptions.parse(app.options(PLUGIN_NAME))
        app.extras[PLUGIN_NAME] = options
    return options


def watch_of(app: PluginHost) -> CancelWatch | None:
    """The app's watch, made on first use for its broker; None without the facet."""
    kept = app.extras.get(WATCH_KEY)
    if kept is not None and kept[0] is app.broker:
        return cast("CancelWatch | None", kept[1])
    store = app.broker.extension(CANCELLATIONS)
    watch = None
    if store is not None:
        # the watch thread is a worker's (or the first gate's): not imported by a push
        from cogworker.plugins.cancel.watch import CancelWatch

        options = options_of(app)
        watch = CancelWatch(store, options.ttl, options.refresh_interval, app.clock)
    app.extras[WATCH_KEY] = (app.broker, watch)
    return watch


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    """Check ``plugin_options.cancel`` (a bad value stops start-up)."""
    app.extras.pop(PLUGIN_NAME, None)
    options_of(app)


@hookimpl
def cogworker_job_options() -> list[JobOption]:
    return [JobOption("cancel", "'flag' (job.cancelled() turns true) or 'raise' (JobCancelled "
                      "is raised in a sync job's thread too)", is_cancel_mode)]


def _gate(app: PluginHost, watch: CancelWatch) -> StartGate:
    hooks = app.hooks

    def drop_cancelled(job: Payload) -> bool:
        if not watch.is_cancelled(job.get("jid")):
            return False
        logger.warning("cancelled: %s jid=%s queue=%s was cancelled before it started; "
                       "dropped without running", job.get("class"), job.get("jid"),
                       job.get("queue"))
        hooks.release_unique_lock(app, job, "cancelled")
        hooks.release_periodic_lock(app, job)
        hooks.job_cancelled(app, job, "before_start")
        return True

    return drop_cancelled


@hookimpl
def cogworker_start_gate(app: PluginHost) -> StartGate | None:
    watch = watch_of(app)
    return None if watch is None else _gate(app, watch)


def _raises_in_thread(ctx: JobContext) -> bool:
    definition = ctx.definition
    if definition is None:
        return False
    if (ctx.job.get("cancel") or definition.options.get("cancel")) != "raise":
        return False
    return not definition.is_async  # an async job is told by the cancellation of its task


def _cancelled_error(jid: str) -> JobCancelled:
    return JobCancelled(f"job {jid} was cancelled while running")


def _middleware(watch: CancelWatch) -> ServerMiddleware:
    def watch_run(ctx: JobContext, call_next: Callable[[], object]) -> object:
        signal = CancelSignal(str(ctx.job.get("jid")), raise_in_thread=_raises_in_thread(ctx))
        watch.register(signal)
        token = enter_signal(signal)
        try:
            result = call_next()
        except JobCancelled:
            raise
        except BaseException as exc:
            if signal.fired:  # CancelledError, or whatever the job raised on its way out
                raise _cancelled_error(signal.jid) from exc
            raise
        finally:
            leave_signal(token, signal)
            watch.unregister(signal)
        if signal.fired:
            raise _cancelled_error(signal.jid)
        return result

    return watch_run


@hookimpl(trylast=True)
def cogworker_server_middleware(app: PluginHost) -> ServerMiddleware | None:
    """The innermost middleware, so the others see a stopped run end in JobCancelled."""
    watch = watch_of(app)
    return None if watch is None else _middleware(watch)


@hookimpl
def cogworker_startup(worker: WorkerHandle) -> None:
    watch = watch_of(worker.app)
    if watch is None:
        logger.warning("cancel: broker %r keeps no cancellations (no %r facet); the cancel "
                       "plugin stays idle in this process", worker.app.broker.name,
                       CANCELLATIONS.name)
        return
    watch.start()


@hookimpl
def cogworker_shutdown(worker: WorkerHandle) -> None:
    watch = watch_of(worker.app)
    if watch is not None:
        watch.stop()
