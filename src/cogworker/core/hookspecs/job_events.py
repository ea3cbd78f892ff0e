"""Hook specifications: job events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogworker.core.markers import hookspec

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

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

    Implemented by builtin: status (``retrying``), attempts (a ``retrying`` entry).

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

    Implemented by builtin: status (``failed``), attempts (a ``dead`` or ``killed`` entry;
    the engine releases locks itself before this), batches (a death in the job's batch),
    workflows (a workflow step's death fails its workflow).

    Example::

        @cogworker.hookimpl
        def cogworker_job_died(app, job, exception):
            alert(job["class"], exception)
    """


@hookspec
def cogworker_before_ack(app: PluginHost, raws: Sequence[str]) -> None:
    """Finished jobs are about to be acknowledged (dropped from where the fetcher holds
    them), in one batch.

    Called by the worker on the thread that acknowledges (the ack batcher's, usually),
    before the acknowledgement, also when an acknowledgement is retried. What a plugin
    must have written before a job is forgotten belongs here: a crash before the
    acknowledgement runs the job again, so the write may happen twice and must be
    idempotent. Gather the writes into one broker call: the batch is up to 200 jobs.

    :param app: the application.
    :param raws: the exact stored texts of the jobs (as fetched).

    Failure policy: propagates: the jobs are not acknowledged, and the acknowledgement
    (with this hook) is retried as a failed acknowledgement is.

    Implemented by builtin: batches (the settles of the batch jobs that succeeded).

    Example::

        @cogworker.hookimpl
        def cogworker_before_ack(app, raws):
            ledger.write_many(raws)  # idempotent: a re-run job may come again
    """


@hookspec
def cogworker_job_expired(app: PluginHost, job: Payload, late: float) -> None:
    """A fetched job was dropped without running: its ``expires_at`` had passed.

    Called once per drop, by the worker that fetched it, after it was acknowledged (it is
    gone from the queue) and its locks released.

    :param app: the application.
    :param job: the payload as fetched.
    :param late: seconds between its ``expires_at`` and the fetch.

    Failure policy: isolated.

    Implemented by builtin: status (``expired``), history (an ``expired`` record), metrics
    (a count per class), batches (counts as a success in the job's batch, as in Sidekiq
    Pro), workflows (a step dropped unrun fails its workflow).

    Example::

        @cogworker.hookimpl
        def cogworker_job_expired(app, job, late):
            app.logger("acme").info("%s %s dropped, %.0fs too late", job["class"],
                                    job["jid"], late)
    """


@hookspec
def cogworker_job_cancelled(app: PluginHost, job: Payload, when: str) -> None:
    """A job was cancelled (``app.cancel``, ``cogworker cancel``) and settled as cancelled:
    it will not run (again), it is not retried and not dead.

    Called once per cancelled job: ``before_start`` by whoever removed it from where it
    waited (the process that called ``app.cancel``) or by the worker that fetched it and
    dropped it unrun; ``while_running`` by the worker whose run of it was told to stop and
    ended. Its locks were released before.

    :param app: the application.
    :param job: the payload (as stored, or as fetched).
    :param when: ``before_start`` or ``while_running``.

    Failure policy: isolated.

    Implemented by builtin: status (``cancelled``), history (a ``cancelled`` record for a
    job that never ran; a run that was stopped is recorded by its middleware), metrics (a
    count per class), batches (a cancelled member counts as dead), workflows (a cancelled
    step fails its workflow).

    Example::

        @cogworker.hookimpl
        def cogworker_job_cancelled(app, job, when):
            app.logger("acme").info("%s %s cancelled (%s)", job["class"], job["jid"], when)
    """


@hookspec
def cogworker_job_discarded(app: PluginHost, job: Payload, exception: BaseException) -> None:
    """A failed job was dropped: its ``retry_in`` answered ``"discard"``.

    Called once, by the worker that ran it, after its locks were released; nothing was
    written to retry or dead.

    :param app: the application.
    :param job: the payload with its failure fields (``error_class``, ``retry_count``...).
    :param exception: what the job raised.

    Failure policy: isolated.

    Implemented by builtin: ``status`` (``failed``), ``attempts`` (a ``discarded`` entry),
    ``batches`` (counts as a death in the job's batch), ``workflows`` (a discarded step
    fails its workflow).

    Example::

        @cogworker.hookimpl
        def cogworker_job_discarded(app, job, exception):
            app.logger("acme").info("dropped %s %s", job["class"], job["jid"])
    """


@hookspec
def cogworker_job_progress(app: PluginHost, job: Payload, pct: float | None,
                           message: str | None, fields: Mapping[str, str]) -> None:
    """A running job reported progress (``job.progress``) or stored fields (``job.store``).

    Called on the job's own thread, so an implementation must be quick (buffer, do not
    write). ``pct`` (0 … 100) and ``message`` are None for a call that only stores fields.

    :param app: the application.
    :param job: the running job's payload.
    :param pct: how far along it is, in percent, or None.
    :param message: what it is doing, or None.
    :param fields: fields to store with its status (strings), possibly empty.

    Failure policy: isolated (a failing implementation never fails the job).

    Implemented by builtin: ``status``.

    Example::

        @cogworker.hookimpl
        def cogworker_job_progress(app, job, pct, message, fields):
            if pct is not None:
                progress_bar(job["jid"]).update(pct)
    """


@hookspec
def cogworker_jobs_deleted(app: PluginHost, jids: Sequence[str], source: str) -> None:
    """Jobs were deleted by a person or a program through the API (``cogworker retry
    delete``, ``dead delete``, a ``clear``, the dashboard).

    Called after the delete, with the jids of what was removed (for a ``clear`` of a large
    set, in batches). Not called for jobs that leave a set by running.

    :param app: the application.
    :param jids: the deleted jobs' jids.
    :param source: where they were deleted from: ``retry``, ``dead``, ``schedule`` or
        ``queue:<name>``.

    Failure policy: isolated.

    Implemented by builtin: ``attempts`` (their trails go too).

    Example::

        @cogworker.hookimpl
        def cogworker_jobs_deleted(app, jids, source):
            audit.record("deleted", source, list(jids))
    """


@hookspec
def cogworker_orphans_recovered(app: PluginHost, identity: str, count: int,
                                jobs: Sequence[Payload]) -> None:
    """Jobs left in progress by a dead process were put back on their queues.

    :param app: the application.
    :param identity: the dead process.
    :param count: how many jobs.
    :param jobs: their payloads, as requeued (a stored job that is not readable JSON is
        counted but not listed).

    Failure policy: isolated.

    Implemented by builtin: ``status`` (sets them back to ``queued``, one write), metrics
    (``cogworker_orphans_recovered_total``), limits (releases the dead process's
    concurrency slots).

    Example::

        @cogworker.hookimpl
        def cogworker_orphans_recovered(app, identity, count):
            app.logger("acme").warning("%d job(s) of dead process %s requeued",
                                       count, identity)
    """
