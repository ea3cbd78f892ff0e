"""The worker's part: settle each batch job's outcome before it is acknowledged.

A batch job's run is wrapped by the plugin's server middleware: after it raises,
``failure`` (or ``dead`` on its last allowed attempt) is recorded at once; after it
returns, ``success`` is owed and recorded by ``cogworker_before_ack``, with the other
successes of the same ack batch in one round trip, just before the worker acknowledges
them (outside a worker, in the test modes, at once). A crash after the settle and before the
ack runs the job again, and its second settle changes nothing (the step is idempotent per
jid). Deaths decided elsewhere (``retry_in`` answering ``"kill"`` or ``"discard"``, a job
orphaned too often) arrive through the job-event hooks and settle ``dead`` the same way;
a job dropped unrun past its ``expires_at`` settles ``success`` (Sidekiq Pro's rule).

A job of a cancelled batch is skipped at start: the worker keeps the cancelled bids in
memory (read at its first batch job, re-read every heartbeat, and learnt from every
settle's reply), so the check costs no command per job; a batch cancelled less than a
heartbeat ago may still start jobs a worker fetches meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from cogworker.core.broker.batches import SettleItem
from cogworker.core.payload import max_retries
from cogworker.plugins.batches.building import BID_FIELD, QUEUE_FIELD
from cogworker.plugins.batches.errors import BatchSettleError

if TYPE_CHECKING:
    from cogworker.core.broker.batches import BatchOutcome
    from cogworker.core.middleware import JobContext
    from cogworker.core.payload import Payload
    from cogworker.plugins.batches.runtime import BatchesRuntime

logger = logging.getLogger("cogworker.plugin.batches")


def batch_of(job: Payload) -> str | None:
    bid = job.get(BID_FIELD)
    return bid if isinstance(bid, str) and bid else None


def _callback_queue(runtime: BatchesRuntime, job: Payload) -> str:
    queue = job.get(QUEUE_FIELD)
    return queue if isinstance(queue, str) and queue else runtime.options.callback_queue


def _last_attempt(job: Payload) -> bool:
    """Whether this failure sends the job to dead (as the engine decides, before any
    ``retry_in``: a "kill" or "discard" arrives through the death/discard hooks)."""
    count = job.get("retry_count")
    done = count if isinstance(count, int) and not isinstance(count, bool) else 0
    return done + 1 > max_retries(job.get("retry"))


def run_batch_job(runtime: BatchesRuntime, ctx: JobContext, bid: str,
                  call_next: Callable[[], object]) -> object:
    job = ctx.job
    jid, queue = str(job.get("jid")), _callback_queue(runtime, job)
    if not runtime.seen_batch_job:  # this process's first batch job: learn the cancelled
        runtime.seen_batch_job = True
        runtime.refresh_cancelled()
    if bid in runtime.cancelled:
        logger.info("skipped: %s jid=%s: its batch %s was cancelled", job.get("class"), jid,
                    bid)
        runtime.settle(bid, jid, "cancelled", queue)
        return None
    try:
        result = call_next()
    except BaseException:
        settle_quietly(runtime, job, "dead" if _last_attempt(job) else "failure")
        raise
    if runtime.defer_success:  # a worker: settled with its ack batch, before the ack
        runtime.owe_success(ctx.raw, SettleItem(bid, jid, "success", queue))
    else:
        runtime.settle(bid, jid, "success", queue)
    return result


def settle_quietly(runtime: BatchesRuntime, job: Payload, outcome: BatchOutcome) -> None:
    """Settle a failure, or an outcome decided outside the run; a broker that stays away
    is logged, never raised (the job's retry, or the death hook, settles it again)."""
    bid = batch_of(job)
    if bid is None:
        return
    jid = str(job.get("jid"))
    try:
        runtime.settle(bid, jid, outcome, _callback_queue(runtime, job))
    except BatchSettleError as exc:
        logger.error("batch %s: could not record %s of jid=%s: %s", bid, outcome, jid, exc)
    except Exception:
        logger.exception("batch %s: recording %s of jid=%s failed", bid, outcome, jid)
