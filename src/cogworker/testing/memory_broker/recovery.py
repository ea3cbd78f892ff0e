"""Recovering the held jobs of dead processes, and filing what others left behind, in memory.

The rules are the Redis broker's (``requeue_orphan.lua`` and its neighbours): a holder is
dead when its presence is gone and its last beat is older than the threshold; its jobs move
one step at a time, most recently claimed first, each step re-checking under the lock that
the holder is still dead and the job still its most recently claimed one; the orphan counter
is bumped with each requeue and a job orphaned too often is parked for burial instead.
"""

from __future__ import annotations

import logging
from typing import Literal

from cogworker.core.broker import (
    LIVE_QUEUE_WINDOW,
    LockClaim,
    RecoveryOptions,
    RecoveryReport,
    Relock,
    SortedSetName,
    StepFailure,
)
from cogworker.core.broker.burial import orphan_dead_record
from cogworker.testing.memory_broker.payloads import requeue_queue
from cogworker.testing.memory_broker.state import MemoryState, lock_claim

logger = logging.getLogger(__name__)

Outcome = Literal["requeued", "parked", "changed", "alive"]


def recover_orphans(state: MemoryState, own_identity: str, options: RecoveryOptions,
                    relock: Relock | None) -> RecoveryReport:
    """Requeue the held jobs of every dead holder but ``own_identity``."""
    report = RecoveryReport()
    with state.lock:
        candidates = set(state.holders)
        if options.scan:
            candidates.update(state.held)
    report.registry_read = True  # memory reads its registry and every held list whole
    for holder in sorted(candidates - {own_identity}):
        _recover_holder(state, holder, options, relock, report, vouched=False)
    _log_report(report)
    return report


def recover_process(state: MemoryState, holder: str, options: RecoveryOptions,
                    relock: Relock | None) -> RecoveryReport:
    """Requeue ``holder``'s held jobs without the liveness check (its death is vouched for)."""
    report = RecoveryReport()
    _recover_holder(state, holder, options, relock, report, vouched=True)
    _log_report(report)
    return report


def _recover_holder(state: MemoryState, holder: str, options: RecoveryOptions,
                    relock: Relock | None, report: RecoveryReport, *, vouched: bool) -> None:
    try:
        moved = _walk(state, holder, options, relock, report, vouched=vouched)
    except Exception as exc:  # a bug must never stop the recovery of the other holders
        logger.exception("orphan recovery of process %s failed; skipped this time", holder)
        report.failures.append(StepFailure(f"recover the held jobs of {holder}", exc))
        return
    if moved:
        report.moved += moved
        report.recovered[holder] = moved
        logger.warning("requeued %d job(s) left held by dead process %s", moved, holder)


def _walk(state: MemoryState, holder: str, options: RecoveryOptions, relock: Relock | None,
          report: RecoveryReport, *, vouched: bool) -> int:
    """Handle ``holder``'s held jobs head first, at most once per job held at the start."""
    moved = 0
    with state.lock:
        count = len(state.held.get(holder, ()))
    for _ in range(count):
        with state.lock:
            held = state.held.get(holder)
            if not held:
                break
            head = held[0]
        outcome = _requeue_head(state, holder, head, lock_claim(relock, head), options,
                                report, vouched=vouched)
        if outcome == "alive":
            return moved
        if outcome == "requeued":
            moved += 1
            report.requeued.setdefault(holder, []).append(head)
    with state.lock:
        if not state.held.get(holder) and (vouched or state.is_dead(holder, options.threshold)):
            state.holders.discard(holder)
            state.last_beat.pop(holder, None)
    return moved


def _requeue_head(state: MemoryState, holder: str, head: str, claim: LockClaim | None,
                  options: RecoveryOptions, report: RecoveryReport, *,
                  vouched: bool) -> Outcome:
    """One atomic step: re-check, then requeue (or park) the most recently claimed job."""
    with state.lock:
        if not vouched and not state.is_dead(holder, options.threshold):
            return "alive"
        held = state.held.get(holder)
        if not held or held[0] != head:
            return "changed"
        if state.orphan_count(head) + 1 > options.max_orphanings:
            state.repeat_orphans.append(head)
            state.drop_held(holder, head)
            report.parked += 1
            logger.error("process %s died while running this job more than %d times; it "
                         "goes to dead: %.200s", holder, options.max_orphanings, head)
            return "parked"
        queue = requeue_queue(head)
        state.retake(claim)
        state.queue(queue).append(head)
        state.announce(queue)
        seen = state.live_queues.get(queue)
        if seen is None or state.now() - seen > LIVE_QUEUE_WINDOW:
            state.registered.add(queue)
            if queue not in report.unlisted_queues:
                report.unlisted_queues.append(queue)
        state.drop_held(holder, head)
        state.bump_counter(head)
        return "requeued"


def _log_report(report: RecoveryReport) -> None:
    if report.unlisted_queues:
        logger.warning("requeued orphaned jobs onto queue(s) no live process reads: %s; make "
                       "sure some worker reads them", ", ".join(report.unlisted_queues))


def bury_repeat_orphans(state: MemoryState, now: float, max_orphanings: int) -> list[str]:
    """File every parked repeat orphan into dead, oldest parked first; the records filed."""
    stored: list[str] = []
    try:
        with state.lock:
            count = len(state.repeat_orphans)
        for _ in range(count):
            with state.lock:
                if not state.repeat_orphans:
                    break
                raw = state.repeat_orphans[0]
            record = orphan_dead_record(raw, now, max_orphanings)
            with state.lock:
                if not state.repeat_orphans or state.repeat_orphans[0] != raw:
                    continue
                state.sets["dead"][record] = float(now)
                state.repeat_orphans.pop(0)
                state.forget_counter(raw)
                state.failed += 1
            stored.append(record)
            logger.error("moved a job to dead: orphaned more than %d times (%.200s)",
                         max_orphanings, raw)
    except Exception:
        logger.exception("could not finish burying the repeat orphans; the rest waits for "
                         "the next pass")
    return stored


def file_unsettled(state: MemoryState) -> list[tuple[SortedSetName, str]]:
    """File every handed-over failure into its set, oldest first; the pairs filed."""
    filed: list[tuple[SortedSetName, str]] = []
    with state.lock:
        while state.unsettled:
            item = state.unsettled.pop(0)
            state.sets[item.set_name][item.record] = item.score
            state.forget_counter(item.record)
            filed.append((item.set_name, item.record))
    return filed
