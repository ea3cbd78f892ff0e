"""Hook specifications: job events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

SECTION = "Job events"
"""The title of these hooks in the hook reference."""


@hookspec
def cogworker_job_retried(app: PluginHost, job: Payload, exception: BaseException,
                          delay: float) -> None:
    """A failed job was written to the retry set.

    :param app: the application.
    :param job: the payload as stored.
    :param exception: what the job raised.
    :param delay: seconds until it runs again.

    Failure policy: isolated.

    Implemented by builtin: none.

    Example::

        @cogworker.hookimpl
        def cogworker_job_retried(app, job, exception, delay):
            app.logger("acme").info("%s %s retries in %.0fs: %s", job["class"],
                                    job["jid"], delay, exception)
    """


@hookspec
def cogworker_job_died(app: PluginHost, job: Payload, exception: BaseException) -> None:
    """A job was moved to the dead set (out of retries, killed, or orphaned too often).

    Called once per death, by the process whose write put it there, after the death
    handlers of the app.

    :param app: the application.
    :param job: a copy of the payload as stored in dead.
    :param exception: the job's exception, or ``JobFailedError``/``JobOrphanedError``.

    Failure policy: isolated.

    Implemented by builtin: none (the engine releases locks itself before this).

    Example::

        @cogworker.hookimpl
        def cogworker_job_died(app, job, exception):
            alert(job["class"], exception)
    """


@hookspec
def cogworker_orphans_recovered(app: PluginHost, identity: str, count: int) -> None:
    """Jobs left in progress by a dead process were put back on their queues.

    :param app: the application.
    :param identity: the dead process.
    :param count: how many jobs.

    Failure policy: isolated.

    Implemented by builtin: metrics (``cogworker_orphans_recovered_total``).

    Example::

        @cogworker.hookimpl
        def cogworker_orphans_recovered(app, identity, count):
            app.logger("acme").warning("%d job(s) of dead process %s requeued",
                                       count, identity)
    """
