"""The ``limits`` built-in plugin: fleet-wide concurrency and rate limiters.

Three kinds, kept on the broker (the ``LIMITS`` facet), each step atomic there:
``concurrent`` (at most N at once), ``window`` (at most N per fixed or sliding window),
``bucket`` (a steady rate with bursts). Declared on a job, ``@app.job(limits=[...])``, or
used inline, ``with app.limiter.concurrent("stripe", 5):`` (:mod:`.limiter`).

* Over the limit a job never waits on a thread: :class:`~cogworker.core.errors.OverLimit`
  makes the worker put it back on the schedule, with back-off and jitter, in the same
  atomic step as its acknowledgement, and it uses no retry (``limit_reschedules`` counts
  these; past ``max_reschedules`` it is a failure like any other).
* A concurrency slot is never leaked: it is released when the job ends (any exit); every
  heartbeat renews the slots this process holds; when orphan recovery declares a process
  dead (``cogworker_orphans_recovered``), its slots are released; and a slot whose lease
  was not renewed ends by itself.

Cost: a job that declares no limits costs nothing (the middleware is installed only when
some job declares limits, and skips the others on one dict lookup); the heartbeat writes
only while this process holds slots.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING

from cogworker.core.broker import LIMITS
from cogworker.core.job_options import JobOption
from cogworker.core.markers import hookimpl
from cogworker.plugins.limits.options import PLUGIN_NAME, LimitsOptions

if TYPE_CHECKING:
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.middleware import JobContext, ServerMiddleware
    from cogworker.core.outage import OutageLog
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost
    from cogworker.plugins.limits.limiter import Limit

logger = logging.getLogger(__name__)
Chain = list["ServerMiddleware | None"]
RENEW_SITE = "limits: lease renewal"
RELEASE_SITE = "limits: releasing a dead process's slots"


@functools.cache
def _outages() -> OutageLog:
    """The log of the broker's outages met by this plugin's upkeep (a worker's heartbeat,
    its orphan recovery): made, and its module imported, on the first of them."""
    from cogworker.core.outage import OutageLog

    return OutageLog()


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    app.extras[PLUGIN_NAME] = LimitsOptions.parse(app.options(PLUGIN_NAME),
                                                  app.settings.sources.get("plugin_options"))


def _is_limits(value: object) -> bool:
    # the limiter's module, only for a job that declares limits: a push of any other
    # job needs none of it
    from cogworker.plugins.limits.limiter import Limit

    return (isinstance(value, (list, tuple)) and bool(value)
            and all(isinstance(item, Limit) and not item.problem() for item in value))


@hookimpl
def cogworker_job_options() -> list[JobOption]:
    return [JobOption("limits", "a non-empty list of app.limiter limits (concurrent, window, "
                      "bucket), each with valid numbers", _is_limits)]


def declared_limits(definition: object) -> Sequence[Limit]:
    local = getattr(definition, "local_options", None)
    limits = local.get("limits") if isinstance(local, dict) else None
    return limits if isinstance(limits, (list, tuple)) else ()


@hookimpl(wrapper=True)
def cogworker_server_middleware(app: PluginHost) -> Generator[None, Chain, Chain]:
    """A wrapper, so that its middleware goes first, outside every other plugin's: an
    over-limit job is then no run for metrics, history or status. Adds nothing when no
    registered job declares limits: then jobs pay nothing."""
    others = yield
    if not any(declared_limits(definition) for definition in app.registry.definitions()):
        return others
    return [limits_middleware(), *others]


def limits_middleware() -> ServerMiddleware:
    """Take room in each declared limiter before the job runs; give it back after."""

    def limited(ctx: JobContext, call_next: Callable[[], object]) -> object:
        limits = declared_limits(ctx.definition)
        if not limits:
            return call_next()
        with contextlib.ExitStack() as taken:
            for limit in limits:
                acquired = limit.acquire_for(ctx.job)
                taken.callback(limit.release, acquired)
            return call_next()

    return limited


@hookimpl
def cogworker_startup(worker: WorkerHandle) -> None:
    """Register the declared limits that have a fixed name, so that ``cogworker limits``
    lists them before their first use (one write; a keyed limit registers per key on its
    first use)."""
    app = worker.app
    store = app.broker.extension(LIMITS)
    specs = {limit.name: limit.spec_for([]) for definition in app.registry.definitions()
             for limit in declared_limits(definition) if limit.key is None}
    if store is None or not specs:
        return
    try:
        store.register(list(specs.values()))
    except Exception as exc:
        logger.warning("couldn't register the declared limiters (%s); each registers on "
                       "its first use", exc)


@hookimpl
def cogworker_heartbeat(worker: WorkerHandle) -> None:
    """Renew every slot this process holds, in one call; nothing when it holds none."""
    from cogworker.plugins.limits.limiter import limiter_of  # a worker's: not a push's

    app = worker.app
    held = limiter_of(app).holds.snapshot()
    store = app.broker.extension(LIMITS)
    if not held or store is None:
        return
    try:
        store.renew(held, app.identity)
    except Exception as exc:
        _outages().report(RENEW_SITE, exc)
    else:
        _outages().recovered(RENEW_SITE)


@hookimpl
def cogworker_orphans_recovered(app: PluginHost, identity: str, count: int,
                                jobs: Sequence[Payload]) -> None:
    """The process ``identity`` was declared dead: its slots go back now."""
    store = app.broker.extension(LIMITS)
    if store is None:
        return
    try:
        released = store.release_process(identity)
    except Exception as exc:
        _outages().report(RELEASE_SITE, exc)
        return
    _outages().recovered(RELEASE_SITE)
    if released:
        logger.warning("released %d limiter slot(s) held by dead process %s", released,
                       identity)
