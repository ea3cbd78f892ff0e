"""Orphan recovery: put back the jobs a dead reliable-fetch process left in progress.

Run by every worker process, whatever its own fetch mode (mixed fleets and fallbacks still
need someone to recover crashed reliable processes): at boot, then every
``orphan_check_interval``. A process is dead only when its presence key is gone **and** its
last beat, on Redis's clock, is older than ``orphan_threshold``; a process that merely
missed a few beats (failover, a long pause) keeps its jobs.

Each job moves in its own atomic step (``requeue_orphan.lua``), which re-checks that the
owner is dead and that the job is still the list's head. The list is walked head first (the
most recently fetched job) and every job is RPUSHed onto the end of its queue that the
next fetch pops, so the earliest fetched job runs first again. A job orphaned more than
``max_orphanings`` times is parked on ``repeat_orphans`` and then filed in dead by
:func:`bury_repeat_orphans`; :func:`file_unsettled` files the failures a stopping process
could not (both in :mod:`cogworker.redis.filing`, re-exported here).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from cogworker.core.broker import RecoveryReport
from cogworker.core.errors import BrokerError, BrokerUnavailableError
from cogworker.redis.errors import translate_errors
from cogworker.redis.filing import (
    bury_repeat_orphans,
    file_unsettled,
    orphan_dead_record,
    unsettled_record,
    walk_list,
)
from cogworker.redis.requeue import ORPHAN_COUNTER_TTL, RedisBackend, requeue_target, text, wire

logger = logging.getLogger(__name__)

PACKAGE = "cogworker.redis"
LIVE_QUEUE_WINDOW = 120
"""Seconds within which a ``live_queues`` stamp means "a live process reads this queue"."""

__all__ = [
    "LIVE_QUEUE_WINDOW",
    "RecoveryOptions",
    "bury_repeat_orphans",
    "file_unsettled",
    "recover_orphans",
    "unsettled_record",
]

OnRecovered = Callable[[str, int], None]


class _OwnerAlive(Exception):
    """The list's owner turned out to be alive: leave it alone."""


@dataclass(frozen=True, slots=True)
class RecoveryOptions:
    """The settings one recovery pass works with."""

    threshold: float
    max_orphanings: int
    queued_ttl: int


def recover_orphans(backend: RedisBackend, own_identity: str, *, threshold: float,
                    max_orphanings: int, queued_ttl: int, scan: bool,
                    on_recovered: OnRecovered | None = None) -> RecoveryReport:
    """Requeue the in-progress jobs of every dead process but this one.

    Candidates are the in-progress registry, plus (``scan=True``) a keyspace SCAN for
    in-progress lists that were never registered. ``report.registry_read`` is True only
    when the registry and the requested scan were both read (pass ``scan=True`` until a
    report says so). ``on_recovered(identity, count)`` is called for each dead process
    whose jobs were requeued; its exceptions are logged. An identity that fails is logged
    and skipped; a lost connection ends the pass (``report.connection_lost``).
    ``report.buried`` holds the dead records of jobs that could not be parked on
    ``repeat_orphans`` and were filed in dead directly (run death hooks for them).
    """
    options = RecoveryOptions(threshold, max_orphanings, queued_ttl)
    report = RecoveryReport()
    for identity in sorted(_candidates(backend, scan, report) - {own_identity}):
        try:
            moved = _recover_identity(backend, identity, options, report)
        except BrokerUnavailableError as exc:
            report.connection_lost = True
            logger.warning("orphan recovery stopped: Redis unavailable (%s)", exc)
            break
        except BrokerError as exc:
            logger.error("orphan recovery of process %s failed (%s); skipped this time",
                         identity, exc)
            continue
        except Exception:  # a bug or a poisoned entry must never stop the other processes
            logger.exception("orphan recovery of process %s failed; skipped this time",
                             identity)
            continue
        if moved and on_recovered is not None:
            _notify(on_recovered, identity, moved)
    if report.unlisted_queues:
        logger.warning("requeued orphaned jobs onto queue(s) no live process reads: %s; make "
                       "sure some worker reads them", ", ".join(report.unlisted_queues))
    if report.failed:
        logger.error("%d orphaned job(s) could not be requeued (their queue key is unusable); "
                     "they stay in progress and the next pass tries again", report.failed)
    return report


def _notify(on_recovered: OnRecovered, identity: str, moved: int) -> None:
    try:
        on_recovered(identity, moved)
    except Exception:
        logger.exception("the orphans-recovered callback failed for process %s", identity)


def _candidates(backend: RedisBackend, scan: bool, report: RecoveryReport) -> set[str]:
    """Identities that may own an in-progress list; the two sources fail independently."""
    keys = backend.keys
    found: set[str] = set()
    registry_read = scan_read = True
    try:
        with translate_errors():
            members: set[bytes | str] = backend.client.smembers(keys.inprogress_identities)
        found.update(text(member) for member in members)
    except BrokerError as exc:
        registry_read = False
        report.connection_lost |= isinstance(exc, BrokerUnavailableError)
        logger.warning("could not read %s (%s)", keys.inprogress_identities, exc)
    if scan:
        prefix = keys.inprogress_prefix
        try:
            with translate_errors():
                for key in backend.client.scan_iter(match=_glob_escape(prefix) + "*",
                                                    count=1000):
                    found.add(text(key)[len(prefix):])
        except BrokerError as exc:
            scan_read = False
            report.connection_lost |= isinstance(exc, BrokerUnavailableError)
            logger.warning("could not scan for %s* (%s)", prefix, exc)
    report.registry_read = registry_read and scan_read
    return found


def _glob_escape(pattern: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in pattern)


def _recover_identity(backend: RedisBackend, identity: str, options: RecoveryOptions,
                      report: RecoveryReport) -> int:
    """Walk one process's list job by job, head first; returns how many were requeued."""
    keys = backend.keys
    moved = 0

    def step(raw: str) -> bytes | None:
        nonlocal moved
        status, head = _requeue_orphan(backend, identity, raw, options, report)
        moved += status == "requeued"
        return head

    try:
        walk_list(backend, keys.inprogress(identity), step)
    except _OwnerAlive:
        return moved
    finally:
        report.moved += moved
        if moved:
            logger.warning("requeued %d job(s) left in progress by dead process %s",
                           moved, identity)
    _forget_if_empty(backend, identity, options)
    return moved


def _requeue_orphan(backend: RedisBackend, identity: str, raw: str,
                    options: RecoveryOptions, report: RecoveryReport) -> tuple[str, bytes | None]:
    """One atomic step for the job at the head of a dead process's list."""
    keys = backend.keys
    target = requeue_target(keys, raw)
    now = time.time()
    record = orphan_dead_record(raw, now, options.max_orphanings)
    status, unlisted, head = backend.scripts.run(
        PACKAGE, "requeue_orphan",
        keys=[keys.inprogress(identity), keys.process(identity), keys.last_beat,
              target.counter_key, target.queue_key, keys.repeat_orphans, keys.dead,
              keys.queues, keys.live_queues, keys.stats_failed, *target.lock_keys()],
        args=[identity, options.threshold, now, wire(raw), options.max_orphanings,
              ORPHAN_COUNTER_TTL, target.queue, target.jid, options.queued_ttl,
              LIVE_QUEUE_WINDOW, keys.wakeup, wire(record)],
    )
    outcome = text(status)
    if outcome == "alive":
        raise _OwnerAlive(identity)
    if outcome == "failed":
        report.failed += 1
    elif outcome == "buried":
        report.buried.append(record)
    elif outcome == "parked":
        logger.error("process %s died while running this job more than %d times; it goes "
                     "to dead: %.200s", identity, options.max_orphanings, raw)
    if unlisted and target.queue not in report.unlisted_queues:
        report.unlisted_queues.append(target.queue)
    return outcome, head


def _forget_if_empty(backend: RedisBackend, identity: str, options: RecoveryOptions) -> None:
    """Drop a dead process with an empty list from the registry and the last-beat hash."""
    keys = backend.keys
    backend.scripts.run(
        PACKAGE, "recovery_forget",
        keys=[keys.inprogress(identity), keys.process(identity), keys.last_beat,
              keys.inprogress_identities],
        args=[identity, options.threshold, time.time()],
    )
