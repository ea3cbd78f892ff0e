"""Hook specifications: middleware."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from cogworker.core.middleware import ClientMiddleware, ServerMiddleware, StartGate
    from cogworker.core.plugin_host import PluginHost

SECTION = "Middleware"
"""The title of these hooks in the hook reference."""


@hookspec
def cogworker_client_middleware(app: PluginHost) -> ClientMiddleware | None:
    """Contribute a middleware around every push.

    Called once per app when the client chain is first built.

    :param app: the application.

    Returns a callable ``(ctx, call_next) -> jid | None`` or None. Results are collected
    in pluggy call order (``tryfirst`` first); the first is the outermost wrapper. A
    middleware that does not call ``call_next()`` stops the push: nothing is stored.

    Failure policy: propagates (an exception in the chain fails the push).

    Implemented by builtin: status (``queued``/``scheduled`` after the push), otel (the
    ``send <queue>`` span, which writes the payload's ``otel`` field; unique locks have
    their own hooks, called first), batches (holds the pushes of an open batch block).

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
    skips the job, which then counts as processed. A middleware that acts only on jobs
    carrying a field of its own declares it with
    :func:`cogworker.core.middleware.for_jobs_with`, and the other jobs run without it.

    Failure policy: an exception from a middleware is the job's failure (retry/dead).

    Implemented by builtin: history, metrics (``tryfirst``: outermost, so each times every
    run), status (``working``, then ``complete`` or the failure), otel (the
    ``process <queue>`` span), cancel (``trylast``: innermost; each run's cancellation
    signal, and ``JobCancelled`` out of a run that was told to stop), limits (a
    ``wrapper``: when some job declares limits, its middleware goes first, outside every
    other, so an over-limit job is no run for them), batches (jobs with a ``bid``
    only: settles a batch job's failure; skips a cancelled batch's jobs), workflows
    (``trylast``: innermost; workflow steps only: it stores a step's result and pushes the
    next step before any other middleware hears of the success).

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


@hookspec
def cogworker_start_gate(app: PluginHost) -> StartGate | None:
    """Contribute a check every fetched job passes before it starts.

    Called once per worker, with the server chain. Before each job starts (before its
    ``start`` line, its locks and the server middleware) the worker calls every gate with
    the payload; a gate that returns True has dropped the job: it logged it and told
    whoever must know (its own job-event hook, the lock hooks), and the worker acknowledges
    the job without running it. False lets it through.

    A gate runs for every job: keep it to an in-memory look-up (no broker command).

    :param app: the application.

    Returns a callable ``(job) -> bool`` or None.

    Failure policy: an exception from a gate is logged and the job runs.

    Implemented by builtin: cancel (drops a job whose jid was cancelled).

    Example::

        @cogworker.hookimpl
        def cogworker_start_gate(app):
            banned = load_banned_tenants()

            def gate(job):
                if job.get("tenant") in banned:
                    app.logger("acme").warning("dropped %s", job["jid"])
                    return True
                return False
            return gate
    """
