"""The ``batches`` built-in plugin: groups of jobs with callbacks that fire exactly once.

``with app.batch(description=..., on_success=job, on_complete=job, on_death=job) as b:``
collects the jobs pushed inside it (see :mod:`~cogworker.plugins.batches.building`);
workers settle each batch job's outcome in one atomic step that also pushes the callbacks
it makes due (:mod:`~cogworker.plugins.batches.worker_side`, ``batch_update.lua``);
``cogworker.current_batch()`` adds jobs from inside one (:mod:`.handle`); ``app.batches``
and ``cogworker batches`` inspect and cancel them.

Cost: a job outside a batch costs one dict lookup in each middleware; a batch job's
success is settled with the other successes of its ack batch, one round trip for all,
before the ack (a failure: one round trip at once). Implemented only through hooks (client
and server middleware, job events, heartbeat) and the optional ``BATCHES`` facet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cogworker.core.markers import hookimpl
from cogworker.plugins.batches.building import Batch, hold_if_collecting
from cogworker.plugins.batches.errors import BatchError, BatchSettleError
from cogworker.plugins.batches.handle import BatchHandle, current_batch
from cogworker.plugins.batches.options import PLUGIN_NAME, BatchesOptions
from cogworker.plugins.batches.runtime import BatchesRuntime, runtime_of
from cogworker.plugins.batches.worker_side import batch_of, run_batch_job, settle_quietly

if TYPE_CHECKING:
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.middleware import (
        ClientMiddleware,
        JobContext,
        PushContext,
        ServerMiddleware,
    )
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

__all__ = ["Batch", "BatchError", "BatchHandle", "BatchSettleError", "current_batch"]


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    options = BatchesOptions.parse(app.options(PLUGIN_NAME))
    app.extras[PLUGIN_NAME] = BatchesRuntime(app, options)


@hookimpl
def cogworker_client_middleware(app: PluginHost) -> ClientMiddleware:
    def join_open_batch(ctx: PushContext, call_next: Callable[[], str | None]) -> str | None:
        return hold_if_collecting(app, ctx, call_next)

    return join_open_batch


@hookimpl
def cogworker_server_middleware(app: PluginHost) -> ServerMiddleware:
    from cogworker.core.middleware import for_jobs_with
    from cogworker.plugins.batches.building import BID_FIELD

    @for_jobs_with(BID_FIELD)  # a job outside every batch runs without it
    def settle_batch_job(ctx: JobContext, call_next: Callable[[], object]) -> object:
        bid = batch_of(ctx.job)
        if bid is None:
            return call_next()
        return run_batch_job(runtime_of(app), ctx, bid, call_next)

    return settle_batch_job


@hookimpl
def cogworker_job_died(app: PluginHost, job: Payload) -> None:
    if batch_of(job) is not None:
        settle_quietly(runtime_of(app), job, "dead")


@hookimpl
def cogworker_job_discarded(app: PluginHost, job: Payload) -> None:
    if batch_of(job) is not None:
        settle_quietly(runtime_of(app), job, "dead")


@hookimpl
def cogworker_job_cancelled(app: PluginHost, job: Payload, when: str) -> None:
    """A cancelled member never succeeds: it counts as dead (``on_death`` fires, and
    ``on_complete`` once the others ran), or its batch would wait for it forever."""
    del when
    if batch_of(job) is not None:
        settle_quietly(runtime_of(app), job, "dead")


@hookimpl
def cogworker_job_expired(app: PluginHost, job: Payload) -> None:
    """A job dropped unrun past its ``expires_at`` counts as succeeded (Sidekiq Pro's
    rule), or its batch would never succeed."""
    if batch_of(job) is not None:
        settle_quietly(runtime_of(app), job, "success")


@hookimpl
def cogworker_web_tabs(app: PluginHost) -> list[object]:
    """The Batches tab (imported only when a dashboard is built)."""
    from cogworker.plugins.batches.web import tab

    return [tab()]


@hookimpl
def cogworker_before_ack(app: PluginHost, raws: Sequence[str]) -> None:
    runtime = app.extras.get(PLUGIN_NAME)
    if isinstance(runtime, BatchesRuntime):
        runtime.settle_before_ack(raws)


@hookimpl
def cogworker_startup(worker: WorkerHandle) -> None:
    """From now on this process's acks call ``cogworker_before_ack``."""
    runtime_of(worker.app).defer_success = True


@hookimpl
def cogworker_shutdown(worker: WorkerHandle) -> None:
    """The acks are written (the worker flushed them): settle at once again (the app may
    go on in a test mode)."""
    runtime = worker.app.extras.get(PLUGIN_NAME)
    if isinstance(runtime, BatchesRuntime):
        runtime.defer_success = False


@hookimpl
def cogworker_heartbeat(worker: WorkerHandle) -> None:
    runtime = worker.app.extras.get(PLUGIN_NAME)
    if isinstance(runtime, BatchesRuntime):
        runtime.refresh_cancelled()
