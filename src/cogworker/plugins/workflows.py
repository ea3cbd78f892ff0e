"""The ``workflows`` built-in plugin: chain steps pass their results on, exactly once.

A job is a workflow step when its payload carries a ``workflow`` field
(:mod:`cogworker.workflows.steps`); any other job goes straight through (one dict lookup).
When a step's ``perform`` returns, this plugin's server middleware, still inside the run
and so before the job's ack, hands the result and the next step's payload to
:meth:`~cogworker.core.broker.ResultStore.finish_step`, which stores the one and pushes
the other in one atomic step guarded by the stored result: a step run again after a crash
(killed between its success and its ack) finds its result there and pushes nothing.

* A result must be JSON (what a job argument may be). A step returning anything else
  fails the workflow at that step, clearly (its record says so, an ERROR line too); the
  step itself is acknowledged, not retried: running it again would return the same.
* A step that dies (no retries left, killed, discarded, dropped unrun for its
  ``expires_at``) fails the workflow at that step; the steps after it never run. So does
  the death of the plugin's own jobs (a chord's unlock, a group's launch).
* Storing a result needs the broker: while it is unreachable the middleware retries for
  about three seconds, then raises, so the step fails and is retried as any failure (the
  result, and the next push, are then written by the retry).

Registers two jobs: :data:`~cogworker.plugins.workflows_names.CHORD_UNLOCK`, which a chord's
batch runs on success, and :data:`~cogworker.plugins.workflows_names.GROUP_LAUNCH`, which starts
a group inside a chain. Options: ``plugin_options.workflows.result_ttl`` (seconds, default
one day).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cogworker.core.broker import RESULTS, ResultStore
from cogworker.core.cancel_signal import current_signal
from cogworker.core.errors import JobArgumentError, JobCancelled
from cogworker.core.markers import hookimpl
from cogworker.core.payload import check_json_args, dumps, error_class, error_message
from cogworker.plugins.workflows_names import CHORD_UNLOCK, GROUP_LAUNCH, MARKER
from cogworker.plugins.workflows_options import OPTIONS_KEY, PLUGIN_NAME, WorkflowOptions

if TYPE_CHECKING:
    from cogworker.core.middleware import JobContext, ServerMiddleware
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost
    from cogworker.workflows.steps import StepMarker

logger = logging.getLogger("cogworker.plugin.workflows")


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    app.extras[OPTIONS_KEY] = WorkflowOptions.parse(app.options(PLUGIN_NAME))
    if app.registry.get(CHORD_UNLOCK) is None:
        _register_jobs(app)


def _register_jobs(app: PluginHost) -> None:
    """The job a chord's batch runs on success, and the one that starts a group inside a
    chain: registered on every app with the plugin, so a client checks a chord's
    callback and a worker runs them."""
    def chord_unlock(bid: str, counts: object, workflow_id: str, ttl: float,
                     member_jids: list[str], rest: list[object], step: int) -> None:
        # the workflow machinery is a worker's: imported by the first run, not at a push,
        # and always through the package (see _marker)
        from cogworker.workflows import groups

        groups.unlock_chord(app, workflow_id, ttl, member_jids, rest, step)

    def start_group(result: object, spec: dict[str, Any]) -> None:
        from cogworker.workflows import groups  # as above: a worker's, through the package

        groups.launch_group(app, result, spec)

    app.registry.register(chord_unlock, name=CHORD_UNLOCK, options={}, plugin=PLUGIN_NAME)
    app.registry.register(start_group, name=GROUP_LAUNCH, options={}, plugin=PLUGIN_NAME)


def _store(app: PluginHost) -> ResultStore | None:
    store = app.broker.extension(RESULTS)
    if store is None:
        logger.error("the %s broker keeps no results (no %r facet): workflow steps cannot "
                     "pass their results on", app.broker.name, RESULTS.name)
    return store


def _marker(job: Payload) -> StepMarker | None:
    # Only for a step: off the push path. Through the package, never as
    # cogworker.workflows.steps: a thread importing a submodule first holds that module's
    # import lock while the package's __init__ imports the others, so two processor threads
    # doing it at once (a step finishing, a group launching) deadlock, and Python breaks
    # the cycle with an ImportError in one of them, failing that job.
    from cogworker.workflows import steps

    try:
        return steps.StepMarker.parse(job[MARKER])
    except ValueError as exc:
        logger.error("jid=%s carries a malformed workflow field; it ran as a plain job: %s",
                     job.get("jid"), exc)
        return None


def _result_json(job: Payload, result: object) -> tuple[str | None, str]:
    """The result as JSON text, or None and why it is not JSON."""
    try:
        check_json_args(str(job.get("class")), [result])
        return dumps(result), ""
    except (JobArgumentError, TypeError, ValueError) as exc:
        return None, str(exc)


def finish_step(app: PluginHost, job: Payload, result: object) -> None:
    """Store a finished step's result and push what follows it (see the module doc)."""
    marker = _marker(job)
    store = _store(app) if marker is not None else None
    if marker is None or store is None:
        return
    jid = str(job.get("jid"))
    text, problem = _result_json(job, result)
    if text is None:
        error = f"step {marker.step + 1} ({job.get('class')} jid={jid}) returned a result " \
                f"that is not JSON, so it cannot be passed on: {problem}"
        logger.error("workflow %s failed: %s", marker.workflow_id, error)
        store.fail(marker.workflow_id, marker.step, error, marker.ttl)
        return
    from cogworker.workflows import finishing  # a worker's, through the package as in _marker

    finishing.write_finished(store, marker.finished(jid, text, app.clock()))


def _server_middleware(app: PluginHost) -> ServerMiddleware:
    from cogworker.core.middleware import for_jobs_with

    @for_jobs_with(MARKER)  # a job that is no workflow step runs without it
    def pass_results_on(ctx: JobContext, call_next: Callable[[], object]) -> object:
        if MARKER not in ctx.job:
            return call_next()
        result = call_next()
        # A run told to stop that returned anyway is a cancelled step, whichever of the two
        # innermost middlewares (this one, the cancel plugin's) pluggy put inside: its
        # result must not start the next step.
        signal = current_signal()
        if signal is not None and signal.cancelled():
            raise JobCancelled(f"workflow step {ctx.job.get('jid')} was cancelled while "
                               "running; its result is not passed on")
        finish_step(app, ctx.job, result)
        return result

    return pass_results_on


@hookimpl(trylast=True)
def cogworker_server_middleware(app: PluginHost) -> ServerMiddleware:
    """Innermost of the plugins' (``trylast``): a step's result is stored before any other
    middleware hears of its success, so a batch (a group's, a chord's) counts a member
    as succeeded only once its result is there for the chord's callback."""
    return _server_middleware(app)


def _place(job: Payload) -> tuple[str, int, float] | None:
    """(workflow id, step, TTL) of a job that belongs to a workflow: a step (its
    ``workflow`` field), or one of the plugin's own jobs (their arguments name it)."""
    if MARKER in job:
        marker = _marker(job)
        return None if marker is None else (marker.workflow_id, marker.step, marker.ttl)
    args, name = job.get("args"), job.get("class")
    try:
        if name == CHORD_UNLOCK and isinstance(args, list):
            return str(args[2]), int(args[6]), float(args[3])
        if name == GROUP_LAUNCH and isinstance(args, list):
            spec = args[1]
            return str(spec["id"]), int(spec["step"]), float(spec["ttl"])
    except (IndexError, KeyError, TypeError, ValueError):
        logger.error("jid=%s (%s) has malformed arguments: %.200r", job.get("jid"), name, args)
    return None


def _stop(app: PluginHost, job: Payload, why: str) -> None:
    """A workflow's job dies: its workflow fails at that step (its later steps never run)."""
    place = _place(job) if MARKER in job or job.get("class") in (CHORD_UNLOCK,
                                                                   GROUP_LAUNCH) else None
    store = _store(app) if place is not None else None
    if place is None or store is None:
        return
    workflow_id, step, ttl = place
    error = f"step {step + 1} ({job.get('class')} jid={job.get('jid')}) {why}"
    if store.fail(workflow_id, step, error, ttl):
        logger.warning("workflow %s failed: %s", workflow_id, error)


def _reason(verb: str, exception: BaseException) -> str:
    return f"{verb}: {error_class(exception)}: {error_message(exception)[:500]}"


@hookimpl
def cogworker_job_died(app: PluginHost, job: Payload, exception: BaseException) -> None:
    _stop(app, job, _reason("died", exception))


@hookimpl
def cogworker_job_discarded(app: PluginHost, job: Payload, exception: BaseException) -> None:
    _stop(app, job, _reason("was discarded", exception))


@hookimpl
def cogworker_job_cancelled(app: PluginHost, job: Payload, when: str) -> None:
    _stop(app, job, f"was cancelled ({when.replace('_', ' ')})")


@hookimpl
def cogworker_job_expired(app: PluginHost, job: Payload, late: float) -> None:
    _stop(app, job, f"was dropped unrun, {late:.1f} s past its expires_at")
