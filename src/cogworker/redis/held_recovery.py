"""Orphan recovery on Redis: put back the jobs a dead process left on its in-progress list.

A process is dead only when its presence key is gone **and** its last beat, on Redis's
clock, is older than the threshold; a process that merely missed a few beats (failover, a
long pause) keeps its jobs. Candidates are the in-progress registry
(``inprogress_identities``), plus, when asked, a keyspace SCAN for lists never registered.

Each job moves in its own atomic step (``requeue_orphan.lua``), which re-checks that the
owner is dead and that the job is still the list's head. The list is walked head first (the
most recently fetched job) and every job is RPUSHed onto the end of its queue that the
next fetch pops, so the earliest fetched job runs first again. A job orphaned more than
``max_orphanings`` times is parked on ``repeat_orphans`` for
:func:`~cogworker.redis.filing.bury_repeat_orphans`. A dead process left with an empty list
is forgotten (``recovery_forget.lua``), re-checked dead in the same step.
"""

from __future__ import annotations

import logging
import time

import redis

from cogworker.core.broker import (
    LIVE_QUEUE_WINDOW,
    ORPHAN_COUNTER_TTL,
    RecoveryOptions,
    RecoveryReport,
    Relock,
    StepFailure,
)
from cogworker.core.broker.burial import orphan_dead_record
from cogworker.core.errors import BrokerError, BrokerUnavailableError
from cogworker.redis.errors import translate_errors
from cogworker.redis.filing import walk_list
from cogworker.redis.globs import glob_escape
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import text, wire
from cogworker.redis.requeue_keys import requeue_target
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)

PACKAGE = "cogworker.redis"
SITE = "orphan recovery"


class _OwnerAlive(Exception):
    """The list's owner turned out to be alive: leave it alone."""


class Recovery:
    """Orphan recovery for one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def recover_orphans(self, own_identity: str, options: RecoveryOptions,
                        relock: Relock | None) -> RecoveryReport:
        """Requeue the in-progress jobs of every dead process but ``own_identity`` (see
        :meth:`HeldJobStore.recover_orphans <cogworker.core.broker.HeldJobStore>`)."""
        report = RecoveryReport()
        for identity in sorted(self._candidates(options.scan, report) - {own_identity}):
            if not self._recover_guarded(identity, options, relock, report, vouched=False):
                break
        self._log_outcome(report)
        return report

    def recover_process(self, holder: str, options: RecoveryOptions,
                        relock: Relock | None) -> RecoveryReport:
        """Requeue ``holder``'s jobs without a liveness check (its death is vouched for)."""
        report = RecoveryReport(registry_read=True)
        self._recover_guarded(holder, options, relock, report, vouched=True)
        self._log_outcome(report)
        return report

    def _recover_guarded(self, identity: str, options: RecoveryOptions, relock: Relock | None,
                         report: RecoveryReport, *, vouched: bool) -> bool:
        """Recover one process; False when the connection was lost (the pass ends)."""
        try:
            moved = self._recover_identity(identity, options, relock, report, vouched)
        except BrokerUnavailableError as exc:
            report.connection_lost = True
            logger.warning("orphan recovery stopped: Redis unavailable (%s)", exc)
            return False
        except BrokerError as exc:
            report.failures.append(StepFailure(f"{SITE} of {identity}", exc))
            logger.warning("orphan recovery of process %s failed (%s); skipped this time",
                           identity, exc)
            return True
        except Exception as exc:  # a bug or a poisoned entry must never stop the others
            report.failures.append(StepFailure(f"{SITE} of {identity}", exc))
            logger.exception("orphan recovery of process %s failed; skipped this time",
                             identity)
            return True
        if moved:
            report.recovered[identity] = report.recovered.get(identity, 0) + moved
        return True

    @staticmethod
    def _log_outcome(report: RecoveryReport) -> None:
        if report.unlisted_queues:
            logger.warning("requeued orphaned jobs onto queue(s) no live process reads: %s; "
                           "make sure some worker reads them", ", ".join(report.unlisted_queues))
        if report.failed:
            logger.error("%d orphaned job(s) could not be requeued (their queue key is "
                         "unusable); they stay in progress and the next pass tries again",
                         report.failed)

    def _candidates(self, scan: bool, report: RecoveryReport) -> set[str]:
        """Identities that may own an in-progress list; the two sources fail independently."""
        keys = self._keys
        found: set[str] = set()
        registry_read = scan_read = True
        try:
            with translate_errors():
                members: set[bytes | str] = self._client.smembers(keys.inprogress_identities)
            found.update(text(member) for member in members)
        except BrokerError as exc:
            registry_read = False
            report.connection_lost |= isinstance(exc, BrokerUnavailableError)
            logger.warning("could not read %s (%s)", keys.inprogress_identities, exc)
        if scan:
            prefix = keys.inprogress_prefix
            try:
                with translate_errors():
                    for key in self._client.scan_iter(match=glob_escape(prefix) + "*",
                                                      count=1000):
                        found.add(text(key)[len(prefix):])
            except BrokerError as exc:
                scan_read = False
                report.connection_lost |= isinstance(exc, BrokerUnavailableError)
                logger.warning("could not scan for %s* (%s)", prefix, exc)
        report.registry_read = registry_read and scan_read
        return found

    def _recover_identity(self, identity: str, options: RecoveryOptions, relock: Relock | None,
                          report: RecoveryReport, vouched: bool) -> int:
        """Walk one process's list job by job, head first; returns how many were requeued."""
        moved = 0

        def step(raw: str) -> bytes | None:
            nonlocal moved
            status, head = self._requeue_orphan(identity, raw, options, relock, report,
                                                vouched)
            if status == "requeued":
                moved += 1
                report.requeued.setdefault(identity, []).append(raw)
            return head

        try:
            walk_list(self._client, self._keys.inprogress(identity), step)
        except _OwnerAlive:
            return moved
        finally:
            report.moved += moved
            if moved:
                logger.warning("requeued %d job(s) left in progress by dead process %s",
                               moved, identity)
        self._forget_if_empty(identity, options, vouched)
        return moved

    def _requeue_orphan(self, identity: str, raw: str, options: RecoveryOptions,
                        relock: Relock | None, report: RecoveryReport,
                        vouched: bool) -> tuple[str, bytes | None]:
        """One atomic step for the job at the head of a dead process's list."""
        keys = self._keys
        target = requeue_target(keys, raw, relock)
        now = time.time()
        record = orphan_dead_record(raw, now, options.max_orphanings)
        status, unlisted, head = self._scripts.run(
            PACKAGE, "requeue_orphan",
            keys=[keys.inprogress(identity), keys.process(identity), keys.last_beat,
                  target.counter_key, target.queue_key, keys.repeat_orphans, keys.dead,
                  keys.queues, keys.live_queues, keys.stats_failed, *target.lock_keys()],
            args=[identity, options.threshold, now, wire(raw), options.max_orphanings,
                  ORPHAN_COUNTER_TTL, target.queue, target.lock_owner, target.lock_ttl,
                  LIVE_QUEUE_WINDOW, keys.wakeup, wire(record), "1" if vouched else "0"],
        )
        outcome = text(status)
        if outcome == "alive":
            raise _OwnerAlive(identity)
        if outcome == "failed":
            report.failed += 1
        elif outcome == "buried":
            report.buried.append(record)
        elif outcome == "parked":
            report.parked += 1
            logger.error("process %s died while running this job more than %d times; it goes "
                         "to dead: %.200s", identity, options.max_orphanings, raw)
        if unlisted and target.queue not in report.unlisted_queues:
            report.unlisted_queues.append(target.queue)
        return outcome, head

    def _forget_if_empty(self, identity: str, options: RecoveryOptions, vouched: bool) -> None:
        """Drop a dead process with an empty list from the registry and the last-beat hash."""
        keys = self._keys
        self._scripts.run(
            PACKAGE, "recovery_forget",
            keys=[keys.inprogress(identity), keys.process(identity), keys.last_beat,
                  keys.inprogress_identities],
            args=[identity, options.threshold, time.time(), "1" if vouched else "0"],
        )
