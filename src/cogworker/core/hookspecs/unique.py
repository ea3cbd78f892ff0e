"""Hook specifications: unique jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

SECTION = "Unique jobs"
"""The title of these hooks in the hook reference."""


@hookspec(firstresult=True)
def cogworker_acquire_unique_lock(app: PluginHost, job: Payload) -> bool | None:
    """Take the uniqueness lock for a job about to be pushed.

    Called for every push (immediate, scheduled, bulk) before the client middleware.

    :param app: the application.
    :param job: the normalized payload (has its jid).

    Stops at the first non-None result. True: go on and store the job. False: a duplicate;
    nothing is stored and ``perform_async`` returns None. None: not a unique job.

    Failure policy: propagates (the push fails; nothing is stored).

    Implemented by builtin: unique.

    Example::

        @cogworker.hookimpl
        def cogworker_acquire_unique_lock(app, job):
            if job.get("unique"):
                return locks.acquire(digest(job), job["jid"], ttl=3600)
            return None
    """


@hookspec(firstresult=True)
def cogworker_unique_job_starting(app: PluginHost, job: Payload) -> bool | None:
    """A unique job is about to run; may it?

    Called by the processor before the server chain, for every job.

    :param app: the application.
    :param job: the payload.

    Stops at the first non-None result. False: not now (another copy runs); the engine puts
    the job back on the schedule a few seconds ahead. True or None: run it.

    Failure policy: propagates; the engine then runs the job (never loses it) and logs.

    Implemented by builtin: unique (``while_executing``; releases ``until_executing``).

    Example::

        @cogworker.hookimpl
        def cogworker_unique_job_starting(app, job):
            return None
    """


@hookspec
def cogworker_extend_unique_lock(app: PluginHost, job: Payload, wait: float) -> None:
    """Keep a job's uniqueness lock while it waits for a retry.

    Called after the job was written to the retry set, owner-checked by the implementation.
    The engine says how long the job waits; how much longer the lock lives is the
    plugin's to choose (the built-in adds its ``lock_ttl`` option, alias
    ``unique_lock_ttl``).

    :param app: the application.
    :param job: the payload as stored in retry.
    :param wait: seconds until the retry is due.

    Failure policy: isolated (logged; the job's fate does not change).

    Implemented by builtin: unique.

    Example::

        @cogworker.hookimpl
        def cogworker_extend_unique_lock(app, job, wait):
            locks.extend(digest(job), job["jid"], wait + 3600)
    """


@hookspec
def cogworker_release_unique_lock(app: PluginHost, job: Payload, reason: str) -> None:
    """Release a job's uniqueness lock, owner-checked.

    Called when the job succeeded or failed for good (``reason`` is one of ``success``,
    ``dead``, ``killed``, ``discarded``, ``orphaned``, ``expired``), or for
    ``until_executing`` jobs when it starts (``started``).

    :param app: the application.
    :param job: the payload.
    :param reason: why the lock is released.

    Failure policy: isolated; an implementation should retry releases that failed because
    the store was unavailable (the builtin does so on later heartbeats and at shutdown).

    Implemented by builtin: unique.

    Example::

        @cogworker.hookimpl
        def cogworker_release_unique_lock(app, job, reason):
            locks.release(digest(job), job["jid"])
    """
