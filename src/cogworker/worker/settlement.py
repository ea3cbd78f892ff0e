"""Settling fetched jobs with the fetcher: ack, give back, interrupt, and what failed.

A settlement that cannot be written now is remembered (``pending``) and finished by
reconcile (every orphan check) or at shutdown, never turned into a re-run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogworker.core.broker import Fetcher, SortedSetName, UnitOfWork
from cogworker.core.errors import JobFailedError, PayloadError
from cogworker.core.payload import UNPARSEABLE_CLASS, Payload, decode, encode
from cogworker.worker.death import extend_job_locks, notify_death, release_job_locks
from cogworker.worker.executor import Settlement
from cogworker.worker.failures import interrupt_record

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.settlement")

ACK_ATTEMPTS = 3
ACK_SLEEPS = (0.1, 0.2)


@dataclass(frozen=True, slots=True)
class Pending:
    """A settlement to finish later: an ack, or a record to file into retry/dead."""

    work: UnitOfWork
    set_name: SortedSetName | None = None  # None = just acknowledge
    score: float = 0.0
    record: str = ""


class Settler:
    def __init__(self, app: App, fetcher: Fetcher) -> None:
        self.app = app
        self.fetcher = fetcher
        self.pending: dict[str, Pending] = {}
        self._lock = threading.Lock()
        self.batch_acks: Callable[[UnitOfWork], None] | None = None
        """When set (by the manager's ack batcher), plain acks are handed to it."""

    def settle(self, work: UnitOfWork, settlement: Settlement) -> None:
        if settlement.kind == "give_back":
            self.give_back(work)
        elif settlement.kind == "bury":
            self._bury(work, settlement.record)
        elif settlement.kind == "interrupt" and settlement.failure is not None:
            self._interrupt(work, *settlement.failure)
        elif settlement.died is None and self.batch_acks is not None:
            self.batch_acks(work)
        else:
            self.acknowledge(work)
            if settlement.died is not None:  # hooks run after the ack, never before
                notify_death(self.app, *settlement.died)

    def give_back(self, work: UnitOfWork) -> None:
        try:
            self.fetcher.give_back(work)
        except Exception as exc:
            logger.error("couldn't hand back %s (left in progress): %s", _jid(work), exc)

    def acknowledge(self, work: UnitOfWork) -> None:
        self.acknowledge_many([work])

    def acknowledge_many(self, works: Sequence[UnitOfWork]) -> None:
        """One round trip for all (plus the ``cogworker_before_ack`` writes, when a plugin
        has any); after 3 failed attempts each is remembered as pending."""
        for attempt in range(ACK_ATTEMPTS):
            try:
                self.app.hooks.before_ack(self.app, [work.raw for work in works])
                self.fetcher.acknowledge(works)
                return
            except Exception as exc:
                last = exc
                if attempt < len(ACK_SLEEPS):
                    time.sleep(ACK_SLEEPS[attempt])
        with self._lock:
            for work in works:
                self.pending[work.raw] = Pending(work)
        for work in works:
            logger.error("couldn't acknowledge finished job jid=%s after %d attempts (will "
                         "retry; it may run again if this process stops first): %s",
                         _jid(work), ACK_ATTEMPTS, last)

    def _interrupt(self, work: UnitOfWork, job: Payload, exc: BaseException,
                   decision: Any) -> None:
        try:
            fetched = decode(work.raw)
            record = interrupt_record(fetched, exc, decision.cut_short)
            raw_record = encode(record.payload)
        except Exception:
            logger.exception("building the interrupt record of %s failed; filing a minimal "
                             "dead record", _jid(work))
            record = interrupt_record({"class": job.get("class"), "jid": job.get("jid"),
                                       "queue": work.queue, "retry": False}, exc, True)
            raw_record = encode(record.payload)
        logger.error("couldn't record the failure of jid=%s (%s); %s", job.get("jid"),
                     type(exc).__name__, record.reason)
        pending = Pending(work, record.set_name, record.score, raw_record)
        if not self._file(pending, exc):
            with self._lock:
                self.pending[work.raw] = pending

    def _bury(self, work: UnitOfWork, record: str) -> None:
        """File an unparseable wrapper in dead and drop the raw, atomically (also when
        Redis is full); remembered and filed later when Redis refuses."""
        pending = Pending(work, "dead", time.time(), record)
        if not self._file(pending, None):
            with self._lock:
                self.pending[work.raw] = pending

    def _file(self, pending: Pending, exc: BaseException | None) -> bool:
        """File a pending record through the fetcher; run its consequences once written."""
        assert pending.set_name is not None
        try:
            written = self.fetcher.interrupt(pending.work, pending.set_name, pending.score,
                                             pending.record)
        except Exception as write_exc:
            logger.error("filing jid=%s into %s failed: %s", _jid(pending.work),
                         pending.set_name, write_exc)
            return False
        if written:
            self._after_record(pending, exc)
        return True

    def _after_record(self, pending: Pending, exc: BaseException | None) -> None:
        try:
            stored = decode(pending.record) if pending.record else {}
        except PayloadError:
            return
        if stored.get("class") == UNPARSEABLE_CLASS:  # no job: no locks, no death hooks
            return
        if pending.set_name == "retry":
            delay = max(pending.score - time.time(), 0.0)
            extend_job_locks(self.app, stored, delay)
            return
        release_job_locks(self.app, stored, "dead")
        failure = exc or JobFailedError(str(stored.get("error_message", "")))
        notify_death(self.app, stored, failure)

    def retry_pending(self) -> None:
        """Finish remembered settlements (reconcile, shutdown)."""
        with self._lock:
            items = list(self.pending.items())
        for raw, pending in items:
            done = False
            if pending.set_name is None:
                try:
                    self.app.hooks.before_ack(self.app, [pending.work.raw])
                    self.fetcher.acknowledge([pending.work])
                    done = True
                except Exception as exc:
                    logger.error("acknowledging jid=%s still fails: %s", _jid(pending.work), exc)
            else:
                done = self._file(pending, None)
            if done:
                with self._lock:
                    self.pending.pop(raw, None)

    def snapshot(self) -> dict[str, Pending]:
        with self._lock:
            return dict(self.pending)

    def forget(self, raw: str) -> None:
        with self._lock:
            self.pending.pop(raw, None)


def _jid(work: UnitOfWork) -> str:
    return jid_of(work.raw)


def jid_of(raw: str) -> str:
    """The jid in a raw payload, for log lines; ``?`` when it cannot be read."""
    try:
        return str(decode(raw).get("jid"))
    except Exception:
        return "?"
