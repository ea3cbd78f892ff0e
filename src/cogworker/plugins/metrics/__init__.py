"""Plugin ``metrics``: per job class and queue, per minute and hour, fleet-wide timings.

Off by default (``--plugin metrics`` or ``plugins = ["metrics"]`` turns it on). A server
middleware (outermost: ``tryfirst``) times every run and adds it to an in-memory buffer:
processed or failed, the milliseconds, one latency-histogram bucket
(:data:`~cogworker.core.broker.metrics.BUCKET_BOUNDS_MS`). A :class:`BackgroundFlush`
thread writes the buffer in one broker call at most every ``flush_interval`` seconds
(``broker.extension(METRICS)``), started by ``cogworker_startup`` and stopped, after one last
write, by ``cogworker_shutdown``. It also counts the jobs recovered from dead processes
(``cogworker_orphans_recovered``) and keeps the worst lateness of the cron slots this
process fired (``cogworker_periodic_fired``), and the jobs of each series that ended
without a run: expired (``cogworker_job_expired``) and cancelled
(``cogworker_job_cancelled``; a run stopped by its cancellation is not counted as failed).

Bookkeeping only: a failed write is reported through the outage log and retried with the
next flush, never seen by a job; a crash loses at most one interval of figures. A broker
without the metrics facet makes the plugin log one warning at start-up and stay idle.

Read the figures with :class:`cogworker.api.metrics.Metrics`, ``cogworker metrics`` and the
Prometheus exporter (:mod:`cogworker.prometheus`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, cast

from cogworker.core.broker.metrics import METRICS, MetricsStore
from cogworker.core.errors import JobCancelled, OverLimit
from cogworker.core.markers import hookimpl
from cogworker.plugins.metrics.options import PLUGIN_NAME, MetricsOptions

if TYPE_CHECKING:
    from cogworker.core.background_flush import BackgroundFlush
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.middleware import JobContext, ServerMiddleware
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost, PluginHostBase
    from cogworker.plugins.metrics.buffer import MetricsBuffer

logger = logging.getLogger(__name__)

EXTRA_KEY: Final = PLUGIN_NAME
THREAD_NAME: Final = "cogworker-metrics"


_buffer_lock = threading.Lock()


class MetricsState:
    """What the plugin keeps per app (``app.extras["metrics"]``): the options, the buffer
    and the flush thread. The buffer (and its module) is made on first use, so a process
    that only pushes, whose ``cogworker_configure`` makes this state, never imports it."""

    __slots__ = ("_buffer", "flusher", "options")

    def __init__(self, options: MetricsOptions) -> None:
        self.options = options
        self.flusher: BackgroundFlush | None = None
        self._buffer: MetricsBuffer | None = None

    @property
    def buffer(self) -> MetricsBuffer:
        buffer = self._buffer
        if buffer is None:
            with _buffer_lock:  # two threads' first counts go into one buffer
                buffer = self._buffer
                if buffer is None:
                    from cogworker.plugins.metrics.buffer import MetricsBuffer

                    buffer = self._buffer = MetricsBuffer()
        return buffer


def state_of(app: PluginHostBase) -> MetricsState:
    """The plugin's state of ``app`` (made from the defaults if configure did not run)."""
    state = app.extras.get(EXTRA_KEY)
    if state is None:
        state = app.extras.setdefault(EXTRA_KEY, MetricsState(MetricsOptions()))
    return cast("MetricsState", state)


def flush_function(store: MetricsStore, state: MetricsState) -> Callable[[], None]:
    """Write what the buffer holds in one call; on failure put it back and raise."""

    def flush() -> None:
        batch = state.buffer.take()
        if not batch:
            return
        try:
            store.record(batch, time.time(), state.options.minute_retention,
                         state.options.hour_retention)
        except BaseException:
            state.buffer.give_back(batch)
            raise

    return flush


def timing_middleware(buffer: MetricsBuffer) -> ServerMiddleware:
    """Times each run (the whole inner chain and ``perform``) into ``buffer``."""

    observe, perf_counter = buffer.observe, time.perf_counter

    def timed(ctx: JobContext, call_next: Callable[[], object]) -> object:
        started = perf_counter()
        try:
            result = call_next()
        except JobCancelled:
            raise  # not a failure: cogworker_job_cancelled counts it
        except BaseException as exc:
            if isinstance(exc, OverLimit) and exc.reschedules(ctx.job):
                raise  # an inline limiter was full: rescheduled, no run (as a declared one)
            observe(str(ctx.job.get("class")), ctx.queue, (perf_counter() - started) * 1000,
                    True)
            raise
        observe(str(ctx.job.get("class")), ctx.queue, (perf_counter() - started) * 1000, False)
        return result

    return timed


# -- hooks ----------------------------------------------------------------------------------


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    options = MetricsOptions.parse(app.options(PLUGIN_NAME),
                                   app.settings.sources.get("plugin_options"))
    previous = app.extras.get(EXTRA_KEY)
    if isinstance(previous, MetricsState):
        previous.options = options  # keep what was gathered across a reconfiguration
    else:
        app.extras[EXTRA_KEY] = MetricsState(options)


@hookimpl(tryfirst=True)
def cogworker_server_middleware(app: PluginHost) -> ServerMiddleware | None:
    if app.broker.extension(METRICS) is None:
        return None  # cogworker_startup says so, once
    return timing_middleware(state_of(app).buffer)


@hookimpl
def cogworker_startup(worker: WorkerHandle) -> None:
    # Imported here: a process that only pushes (a web app, a script) never starts one.
    from cogworker.core.background_flush import BackgroundFlush

    app = worker.app
    store = app.broker.extension(METRICS)
    if store is None:
        logger.warning("metrics: broker %r has no metrics store (%s); the metrics plugin "
                       "stays idle in this process", app.broker.name, METRICS.summary)
        return
    state = state_of(app)
    if state.flusher is not None:
        state.flusher.stop()
    state.flusher = BackgroundFlush(THREAD_NAME, flush_function(store, state),
                                    interval=state.options.flush_interval)
    state.flusher.start()


@hookimpl
def cogworker_shutdown(worker: WorkerHandle) -> None:
    state = state_of(worker.app)
    flusher, state.flusher = state.flusher, None
    if flusher is not None:
        flusher.stop()  # one last write of everything gathered


def _count_unrun(app: PluginHost, job: Payload, *, expired: bool) -> None:
    """Count a job that ended without a run; outside a worker (``app.cancel`` removed it,
    no flush thread) the count is written at once."""
    state = state_of(app)
    state.buffer.count_unrun(str(job.get("class")), str(job.get("queue")), expired=expired)
    store = app.broker.extension(METRICS)
    if state.flusher is None and store is not None:
        try:
            flush_function(store, state)()
        except Exception as exc:
            logger.warning("metrics: could not write the count of jid=%s: %s",
                           job.get("jid"), exc)


@hookimpl
def cogworker_job_expired(app: PluginHost, job: Payload) -> None:
    _count_unrun(app, job, expired=True)


@hookimpl
def cogworker_job_cancelled(app: PluginHost, job: Payload) -> None:
    _count_unrun(app, job, expired=False)


@hookimpl
def cogworker_orphans_recovered(app: PluginHost, count: int) -> None:
    state_of(app).buffer.add_orphans(count)


@hookimpl
def cogworker_periodic_fired(app: PluginHost, lag: float) -> None:
    state_of(app).buffer.note_cron_lag(max(lag, 0.0))
