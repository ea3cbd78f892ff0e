"""The ``status`` built-in plugin: each job's current state, progress and stored fields.

States (:data:`cogworker.core.broker.JOB_STATES`): ``queued`` or ``scheduled`` when pushed,
``working`` while it runs, then ``complete``, ``retrying`` or ``failed`` (dead or
discarded); ``expired`` when a worker dropped it unrun (past its ``expires_at``);
``cancelled`` when it was cancelled (removed, dropped unrun, or stopped while running);
``interrupted`` when a stopping worker put it back unfinished; ``queued`` again
when orphan recovery put it back after its process died. A status lives
``plugin_options.status.ttl`` seconds (1800) after its last write.

Cost: a push writes its status right after it (one round trip, two commands, per push;
a ``push_bulk``'s statuses are gathered and written within a second, two commands a batch);
a worker gathers its jobs' changes in memory and writes them once a second in one call
(two commands for the whole batch), so a job that starts and ends within a second is
written once. The price is that window: a status read less than a second after a change
may still show the state before it. Every write is best-effort: a failure is reported once
by the outage log and never touches a job.

Implemented only through hooks (client and server middleware, job events, lifecycle) and
the optional ``STATUS`` facet; a broker without it makes the plugin log one warning and
stay idle.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cogworker.core.broker import STATUS, StatusRecord
from cogworker.core.errors import OverLimit
from cogworker.core.markers import hookimpl
from cogworker.core.payload import error_class, error_message, max_retries
from cogworker.plugins.status.buffer import StatusBuffer
from cogworker.plugins.status.options import PLUGIN_NAME, StatusOptions

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cogworker.core.broker import JobState
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.middleware import (
        ClientMiddleware,
        JobContext,
        PushContext,
        ServerMiddleware,
    )
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

EXTRAS_KEY = PLUGIN_NAME
_building = threading.Lock()


def buffer_of(app: PluginHost) -> StatusBuffer | None:
    """The app's status buffer, built on first use; None when the broker has no STATUS
    facet (said once, in a warning)."""
    state = app.extras.get(EXTRAS_KEY)
    if isinstance(state, StatusBuffer):
        return state
    if state is False:
        return None
    with _building:  # processor threads meet here on their first job: build one buffer
        return _build_buffer(app)


def _build_buffer(app: PluginHost) -> StatusBuffer | None:
    state = app.extras.get(EXTRAS_KEY)
    if isinstance(state, StatusBuffer):
        return state
    if state is False:
        return None
    store = app.broker.extension(STATUS)
    if store is None:
        app.logger(PLUGIN_NAME).warning(
            "the %s broker keeps no job statuses (no %r facet): the status plugin stays "
            "idle", app.broker.name, STATUS.name)
        app.extras[EXTRAS_KEY] = False
        return None
    options = app.extras.get(f"{EXTRAS_KEY}.options")
    ttl = options.ttl if isinstance(options, StatusOptions) else StatusOptions().ttl
    buffer = StatusBuffer(store, ttl, clock=app.clock)
    app.extras[EXTRAS_KEY] = buffer
    return buffer


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    app.extras[f"{EXTRAS_KEY}.options"] = StatusOptions.parse(app.options(PLUGIN_NAME))


# -- pushes --------------------------------------------------------------------------------

def _client_middleware(app: PluginHost) -> ClientMiddleware:
    def record_push(ctx: PushContext, call_next: Callable[[], str | None]) -> str | None:
        stamped = app.clock()  # before the push: a worker's "working" is always later
        jid = call_next()
        buffer = buffer_of(app) if jid is not None else None
        if buffer is not None:
            state: JobState = "scheduled" if ctx.scheduled_at is not None else "queued"
            record = StatusRecord(jid=str(jid), state=state, updated_at=stamped,
                                  expires_at=stamped + buffer.ttl,
                                  class_name=str(ctx.job.get("class")), queue=ctx.queue)
            if ctx.bulk:  # stored after the whole batch: gathered, written within a second
                buffer.add_pushed(record)
            else:
                buffer.write_now([record])
        return jid

    return record_push


@hookimpl
def cogworker_client_middleware(app: PluginHost) -> ClientMiddleware:
    return _client_middleware(app)


# -- runs ----------------------------------------------------------------------------------

def _final_guess(job: Payload) -> JobState:
    """Before the failure is routed: ``failed`` on the last allowed attempt, else
    ``retrying`` (the job-event hooks correct it: killed, discarded, interrupted)."""
    count = job.get("retry_count")
    failures = (count if isinstance(count, int) and not isinstance(count, bool) else 0) + 1
    return "retrying" if failures <= max_retries(job.get("retry")) else "failed"


def _server_middleware(app: PluginHost) -> ServerMiddleware:
    def record_run(ctx: JobContext, call_next: Callable[[], object]) -> object:
        buffer = buffer_of(app)
        if buffer is None:
            return call_next()
        buffer.record(ctx.job, "working", fresh=True, queue=ctx.queue)
        try:
            result = call_next()
        except BaseException as exc:
            if isinstance(exc, OverLimit) and exc.reschedules(ctx.job):
                buffer.record(ctx.job, "scheduled")  # an inline limiter was full
            else:
                buffer.record(ctx.job, _final_guess(ctx.job), error_class=error_class(exc),
                              error_message=error_message(exc)[:1000])
            raise
        buffer.record(ctx.job, "complete")
        return result

    return record_run


@hookimpl
def cogworker_server_middleware(app: PluginHost) -> ServerMiddleware:
    return _server_middleware(app)


@hookimpl
def cogworker_job_progress(app: PluginHost, job: Payload, pct: float | None,
                           message: str | None, fields: Mapping[str, str]) -> None:
    buffer = buffer_of(app)
    if buffer is None:
        return
    if pct is None:
        buffer.record(job, None, fields=dict(fields))
    else:
        buffer.record(job, "working", pct=pct, message=message, fields=dict(fields))


def _failed(app: PluginHost, job: Payload, state: JobState) -> None:
    buffer = buffer_of(app)
    if buffer is not None:
        buffer.record(job, state, error_class=job.get("error_class"),
                      error_message=job.get("error_message"))


@hookimpl
def cogworker_job_retried(app: PluginHost, job: Payload) -> None:
    _failed(app, job, "retrying")


@hookimpl
def cogworker_job_died(app: PluginHost, job: Payload) -> None:
    _failed(app, job, "failed")


@hookimpl
def cogworker_job_discarded(app: PluginHost, job: Payload) -> None:
    _failed(app, job, "failed")


@hookimpl
def cogworker_job_expired(app: PluginHost, job: Payload, late: float) -> None:
    buffer = buffer_of(app)
    if buffer is not None:
        buffer.record(job, "expired", fresh=True,
                      message=f"dropped unrun, {late:.1f} s past its expires_at")


@hookimpl
def cogworker_job_cancelled(app: PluginHost, job: Payload, when: str) -> None:
    buffer = buffer_of(app)
    if buffer is not None:
        stopped = when == "while_running"
        buffer.record(job, "cancelled", fresh=not stopped,
                      message="stopped while running" if stopped else "cancelled unrun")


@hookimpl
def cogworker_orphans_recovered(app: PluginHost, jobs: Sequence[Payload]) -> None:
    buffer = buffer_of(app)
    if buffer is None or not jobs:
        return
    for job in jobs:
        buffer.record(job, "queued", fresh=True)
    buffer.flush_now()  # one write for them all, at once


# -- lifecycle -----------------------------------------------------------------------------

@hookimpl
def cogworker_startup(worker: WorkerHandle) -> None:
    buffer = buffer_of(worker.app)
    if buffer is not None:
        buffer.start()


@hookimpl
def cogworker_shutdown(worker: WorkerHandle) -> None:
    """Jobs still running now were put back by the stopping worker: ``interrupted``."""
    buffer = buffer_of(worker.app)
    if buffer is None:
        return
    for job in worker.performing_jobs():
        buffer.record(job, "interrupted")
    buffer.stop()
