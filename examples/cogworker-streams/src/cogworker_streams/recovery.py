"""Recovering the entries of dead consumers, then what the broker's held jobs need.

A pass walks every stream (the streams registry, the registered queues and, when asked, a
keyspace scan), lists each stream's consumers, and for every consumer that is not this
process, not live and dead by the contract's rule (:meth:`ProcessRegistry.is_dead
<cogworker.core.broker.ProcessRegistry.is_dead>`: presence gone, last beat older than the
threshold), reads its pending entries and recovers them in one atomic step
(``lua/recover.lua``) that checks the death again, claims each entry still pending to the
dead consumer, and puts it back on its queue's pop end (or, orphaned too often, on its way
to dead), acknowledging and deleting it second. A dead consumer left with nothing pending is
deleted from the group.

Then the broker's own held-jobs recovery runs (a fleet moving from ``reliable`` leaves held
lists), the repeat orphans are buried and the handed-over failures filed: each step
isolated, one :class:`~cogworker.core.broker.RecoveryReport` for all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from cogworker.core.broker import (
    LIVE_QUEUE_WINDOW,
    ORPHAN_COUNTER_TTL,
    RecoveryOptions,
    RecoveryReport,
    Relock,
    StepFailure,
)
from cogworker.core.errors import BrokerError, BrokerUnavailableError
from cogworker.redis import translate_errors
from cogworker_streams.deliveries import PENDING_READ_LIMIT, read_pending
from cogworker_streams.names import (
    GROUP,
    PACKAGE,
    Held,
    KeyList,
    RedisBackedBroker,
    StreamKeys,
    lock_seconds,
    text,
)

logger = logging.getLogger(__name__)

STREAMS_SITE = "streams recovery"
HELD_SITE = "held-jobs recovery"
REPEAT_ORPHANS_SITE = "repeat orphans"
UNSETTLED_SITE = "unsettled failures"
STREAMS_PER_READ = 100
"""Streams whose consumers one read-only call lists."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StepResult:
    """What ``recover.lua`` did for one dead consumer's batch of entries."""

    alive: bool
    requeued: int = 0
    parked: int = 0
    failed: int = 0
    changed: int = 0
    unlisted: bool = False


class StreamsRecovery:
    """Recovery passes for one process."""

    def __init__(self, broker: RedisBackedBroker, keys: StreamKeys, identity: str,
                 relock: Relock) -> None:
        self._broker = broker
        self._keys = keys
        self._identity = identity
        self._relock = relock

    # the two entry points of the Fetcher ----------------------------------------------
    def recover_orphans(self, own_identity: str, options: RecoveryOptions) -> RecoveryReport:
        report = RecoveryReport()
        streams_read = self._step(report, STREAMS_SITE,
                                  lambda: self._recover_dead(own_identity, options, report))
        held = self._step(report, HELD_SITE, lambda: self._broker.held.recover_orphans(
            own_identity, options, self._relock))
        if held is not None:
            merge(report, held)
        report.registry_read = bool(streams_read) and held is not None and held.registry_read
        buried = self._step(report, REPEAT_ORPHANS_SITE,
                            lambda: self._broker.held.bury_repeat_orphans(
                                time.time(), options.max_orphanings))
        report.buried.extend(buried or [])
        filed = self._step(report, UNSETTLED_SITE, self._broker.held.file_unsettled)
        report.filed_dead.extend(raw for set_name, raw in filed or [] if set_name == "dead")
        return report

    def recover_process(self, identity: str, options: RecoveryOptions) -> RecoveryReport:
        report = RecoveryReport()
        self._step(report, STREAMS_SITE, lambda: self._recover_vouched(identity, options, report))
        held = self._step(report, HELD_SITE, lambda: self._broker.held.recover_process(
            identity, options, self._relock))
        if held is not None:
            merge(report, held)
        return report

    def _step(self, report: RecoveryReport, site: str, action: Callable[[], T]) -> T | None:
        try:
            return action()
        except BrokerUnavailableError as exc:
            report.connection_lost = True
            logger.warning("%s stopped: Redis unavailable (%s)", site, exc)
        except Exception as exc:  # a bug or a poisoned entry never skips the other steps
            report.failures.append(StepFailure(site, exc))
            logger.error("%s failed (%s: %s); skipped this time", site, type(exc).__name__, exc)
        return None

    # finding dead consumers -----------------------------------------------------------
    def _recover_dead(self, own_identity: str, options: RecoveryOptions,
                      report: RecoveryReport) -> bool:
        """Recover every dead consumer but ``own_identity``; True when every stream was
        found (registry, queue names and the asked scan all read)."""
        queues, complete = self._stream_queues(options.scan)
        live = {record.identity for record in self._broker.processes.live()}
        verdicts: dict[str, bool] = {}
        for queue, consumer in self._consumers(queues):
            if consumer == own_identity or consumer in live:
                continue
            if consumer not in verdicts:
                verdicts[consumer] = self._broker.processes.is_dead(consumer,
                                                                    options.threshold)
            if verdicts[consumer]:
                self._recover_isolated(queue, consumer, options, report, checked=True)
        log_report(report)
        return complete

    def _recover_vouched(self, identity: str, options: RecoveryOptions,
                         report: RecoveryReport) -> None:
        queues, _ = self._stream_queues(scan=False)
        for queue, consumer in self._consumers(queues):
            if consumer == identity:
                self._recover_isolated(queue, consumer, options, report, checked=False)
        log_report(report)

    def _stream_queues(self, scan: bool) -> tuple[list[str], bool]:
        """Every queue that may have a stream, and whether every source was read."""
        found: set[str] = set()
        complete = True
        try:
            with translate_errors():
                members = self._broker.client.smembers(self._keys.registry)
            found.update(text(member) for member in members)
            found.update(self._broker.queues.names())
            if scan:
                prefix = self._keys.stream_prefix
                with translate_errors():
                    for key in self._broker.client.scan_iter(match=glob_escape(prefix) + "*",
                                                             count=1000):
                        found.add(text(key)[len(prefix):])
        except BrokerUnavailableError:
            raise
        except BrokerError as exc:
            complete = False
            logger.warning("could not list every stream (%s); recovering those found", exc)
        return sorted(found), complete

    def _consumers(self, queues: Sequence[str]) -> list[tuple[str, str]]:
        """(queue, consumer) for every consumer of every stream of ``queues``."""
        found: list[tuple[str, str]] = []
        for start in range(0, len(queues), STREAMS_PER_READ):
            chunk = queues[start:start + STREAMS_PER_READ]
            reply = self._broker.scripts.run(
                PACKAGE, "consumers", keys=[self._keys.stream(queue) for queue in chunk],
                args=[GROUP])
            found += [(chunk[int(reply[i]) - 1], text(reply[i + 1]))
                      for i in range(0, len(reply), 3)]
        return found

    # recovering one consumer ----------------------------------------------------------
    def _recover_isolated(self, queue: str, consumer: str, options: RecoveryOptions,
                          report: RecoveryReport, *, checked: bool) -> None:
        """:meth:`_recover_consumer`; a failure other than unavailability is logged and
        skipped, so one poisoned stream never stops the others."""
        try:
            self._recover_consumer(queue, consumer, options, report, checked=checked)
        except BrokerUnavailableError:
            raise
        except Exception as exc:
            report.failures.append(StepFailure(f"{STREAMS_SITE} of {consumer}", exc))
            logger.error("recovering the entries of process %s in the stream of queue %s "
                         "failed (%s: %s); skipped this time", consumer, queue,
                         type(exc).__name__, exc)

    def _recover_consumer(self, queue: str, consumer: str, options: RecoveryOptions,
                          report: RecoveryReport, *, checked: bool) -> None:
        while True:
            entries = read_pending(self._broker.scripts, self._keys, [queue], consumer)
            step = self._recover_step(queue, consumer, entries[::-1], options, checked)
            if step.alive:
                return
            report.moved += step.requeued
            if step.requeued:
                report.recovered[consumer] = report.recovered.get(consumer, 0) + step.requeued
            report.parked += step.parked
            report.failed += step.failed
            if step.unlisted and queue not in report.unlisted_queues:
                report.unlisted_queues.append(queue)
            if step.parked:
                logger.error("%d job(s) of dead process %s were orphaned more than %d times: "
                             "they go to dead", step.parked, consumer, options.max_orphanings)
            if len(entries) < PENDING_READ_LIMIT or not (step.requeued or step.parked
                                                         or step.changed):
                return

    def _recover_step(self, queue: str, consumer: str, newest_first: Sequence[Held],
                      options: RecoveryOptions, checked: bool) -> StepResult:
        schema = self._keys.schema
        keys = KeyList([self._keys.stream(queue), schema.process(consumer), schema.last_beat,
                        schema.queue(queue), schema.repeat_orphans, schema.queues,
                        schema.live_queues])
        entries: list[str | int] = []
        for held in newest_first:
            if held.raw is None:  # deleted by hand: acknowledged away, no counter touched
                entries += [held.entry_id, 1, 0, "", ""]
                continue
            claim = self._relock(held.raw)
            lock = (0, "", "") if claim is None else (
                keys.position(self._keys.lock(claim)), claim.owner, lock_seconds(claim))
            entries += [held.entry_id, keys.position(self._keys.counter(held.raw)), *lock]
        reply = self._broker.scripts.run(
            PACKAGE, "recover", keys=keys.names,
            args=[GROUP, consumer, self._identity, options.threshold if checked else "",
                  time.time(), options.max_orphanings, ORPHAN_COUNTER_TTL, queue,
                  LIVE_QUEUE_WINDOW, schema.wakeup, *entries])
        if text(reply[0]) == "alive":
            return StepResult(alive=True)
        requeued, parked, failed, changed, unlisted = (int(value) for value in reply[1:6])
        return StepResult(False, requeued, parked, failed, changed, bool(unlisted))


def log_report(report: RecoveryReport) -> None:
    """The log lines of a streams pass (the broker's held recovery logs its own)."""
    for identity, moved in sorted(report.recovered.items()):
        logger.warning("requeued %d job(s) left in progress by dead process %s", moved,
                       identity)
    if report.unlisted_queues:
        logger.warning("requeued orphaned jobs onto queue(s) no live process reads: %s; make "
                       "sure some worker reads them", ", ".join(report.unlisted_queues))
    if report.failed:
        logger.error("%d orphaned job(s) could not be requeued (their queue key is unusable); "
                     "they stay pending and the next pass tries again", report.failed)


def merge(report: RecoveryReport, other: RecoveryReport) -> None:
    """Add ``other``'s counts and lists to ``report`` (``registry_read`` is the caller's)."""
    report.moved += other.moved
    report.failed += other.failed
    report.parked += other.parked
    report.buried.extend(other.buried)
    report.filed_dead.extend(other.filed_dead)
    report.failures.extend(other.failures)
    report.connection_lost |= other.connection_lost
    report.unlisted_queues.extend(queue for queue in other.unlisted_queues
                                  if queue not in report.unlisted_queues)
    for identity, count in other.recovered.items():
        report.recovered[identity] = report.recovered.get(identity, 0) + count


def glob_escape(pattern: str) -> str:
    """``pattern`` with the SCAN glob's special characters escaped."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in pattern)
