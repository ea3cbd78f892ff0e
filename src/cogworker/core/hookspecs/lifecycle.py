"""Hook specifications: lifecycle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from cogworker.core.hookspecs.worker_handle import WorkerHandle

SECTION = "Lifecycle"
"""The title of these hooks in the hook reference."""


@hookspec
def cogworker_startup(worker: WorkerHandle) -> None:
    """A worker process passed its first heartbeat and is about to fetch.

    :param worker: the running worker.

    Failure policy: isolated.

    Implemented by builtin: status, history, metrics (each starts its once-a-second
    writer), batches (settles successes with the acks from now on).

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

    Implemented by builtin: unique, periodic-locks (retry deferred releases, keep locks),
    batches (re-reads the cancelled batches).

    Example::

        @cogworker.hookimpl
        def cogworker_heartbeat(worker):
            busy = len(worker.performing_jobs())
            worker.app.extras.setdefault("acme", {})["busy"] = busy  # read by a probe
    """


@hookspec
def cogworker_shutdown(worker: WorkerHandle) -> None:
    """The worker has drained (or given up waiting) and is about to exit.

    :param worker: the stopping worker.

    Failure policy: isolated.

    Implemented by builtin: unique, periodic-locks (a last try at deferred releases),
    status (running jobs become ``interrupted``; its last write), history, metrics (their
    last write), batches (settles at once again).

    Example::

        @cogworker.hookimpl
        def cogworker_shutdown(worker):
            worker.app.logger("acme").info("worker %s stopping, %d job(s) still running",
                                           worker.identity, len(worker.performing_jobs()))
    """
