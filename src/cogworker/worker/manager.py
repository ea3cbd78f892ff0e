"""The processor threads of one worker process, and what they share.

One thread fetches at a time, for itself and for the other idle threads (a few jobs per
round trip when several are idle), so an idle process sends one blocking fetch at a time
instead of one per thread. Every other thread waits for the fetch gate or for work.

A fetch that failed because the broker was unreachable may still have run (a reply lost on
the way back, a command Redis ran when it woke from a freeze): its jobs are then held by
this process, unknown to every thread. After such a failure, the first fetch
that works again asks the poller for :data:`STRAY_CHECKS` quick reconciles, one per poll,
so those jobs go back to their queue within a few polls instead of after two orphan checks.
"""

from __future__ import annotations

import collections
import logging
import secrets
import threading
import time
from typing import TYPE_CHECKING

from cogworker.core.broker import Fetcher, SortedSetName, UnitOfWork, WorkRecord
from cogworker.core.errors import BrokerUnavailableError, JobFailedError, JobOrphanedError
from cogworker.core.outage import OutageLog
from cogworker.core.payload import Payload, decode
from cogworker.worker.acker import AckBatcher
from cogworker.worker.death import notify_death, release_job_locks
from cogworker.worker.event_loop import EventLoopThread
from cogworker.worker.executor import ACK, GIVE_BACK, JobRunner, Settlement
from cogworker.worker.settlement import Settler, jid_of
from cogworker.worker.stats_buffer import StatsBuffer

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.manager")

FETCH_TIMEOUT = 2.0
QUIET_SLEEP = 0.5
ERROR_BACKOFF = 1.0
MAX_PREFETCH = 16
STRAY_CHECKS = 3
"""Quick reconciles after a fetch failed on an unreachable broker: a stray is requeued when
two consecutive ones see it, and the third covers a fetch the store ran a little later."""


class Manager:
    def __init__(self, app: App, fetcher: Fetcher, outages: OutageLog) -> None:
        self.app = app
        self.fetcher = fetcher
        self.outages = outages
        self.stats = StatsBuffer(app.broker.stats, outages)
        self.event_loop = EventLoopThread()
        self.settler = Settler(app, fetcher)
        self.acker: AckBatcher | None = None
        self.runner: JobRunner | None = None
        self._threads: list[threading.Thread] = []
        self._quiet = threading.Event()
        self._stopping = threading.Event()
        self._fetch_gate = threading.Lock()
        self._prefetched: collections.deque[UnitOfWork] = collections.deque()
        self._lock = threading.Lock()
        self._busy = 0
        self._idle = 0
        self._running: collections.Counter[str] = collections.Counter()
        self._work: dict[str, tuple[UnitOfWork, float]] = {}
        self._performing: dict[str, Payload] = {}
        self._previous_strays: set[str] = set()
        self._taken = 0  # jobs fetched so far
        self._let_go = 0  # of those, jobs run to the end or handed back
        self._fetch_uncertain = False  # a fetch failed in a way that may have moved jobs
        self._stray_checks_due = 0

    # control --------------------------------------------------------------------------------
    def start(self) -> None:
        self.runner = JobRunner(self.app, self.outages, self.stats, self.event_loop)
        self.acker = AckBatcher(self.settler)
        self.settler.batch_acks = self.acker.submit
        for _ in range(self.app.settings.concurrency):
            tid = secrets.token_hex(6)
            thread = threading.Thread(target=self._loop, args=(tid,), daemon=True,
                                      name=f"cogworker-processor-{tid}")
            self._threads.append(thread)
            thread.start()

    def quiet(self) -> None:
        self._quiet.set()

    def stop_intake(self) -> None:
        """Start no job from now on (the first step of a stop, before anything that may
        wait); running jobs go on, and :meth:`stop` then waits for them."""
        self._stopping.set()

    def unquiet(self) -> None:
        if not self._stopping.is_set():
            self._quiet.clear()

    @property
    def is_quiet(self) -> bool:
        return self._quiet.is_set()

    @property
    def is_stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def busy(self) -> int:
        with self._lock:
            return self._busy

    def performing_jobs(self) -> list[Payload]:
        with self._lock:
            return list(self._performing.values())

    def work_counts(self) -> tuple[int, int]:
        """``(taken, in_hand)``: jobs fetched since start, and how many of them are still
        in this process (prefetched, running, or between the two). For ``--burst``."""
        with self._lock:
            return self._taken, self._taken - self._let_go

    def work_entries(self) -> dict[str, WorkRecord]:
        """What runs now, per processor thread (tid): queue, payload, start time. Jobs that
        are not readable payloads are left out."""
        with self._lock:
            items = list(self._work.items())
        entries = {}
        for tid, (work, started) in items:
            try:
                payload = decode(work.raw)
            except Exception:
                continue
            entries[tid] = WorkRecord(work.queue, payload, started)
        return entries

    # the processor loop ---------------------------------------------------------------------
    def _loop(self, tid: str) -> None:
        while not self._stopping.is_set():
            try:
                self._process_one(tid)
            except BaseException as exc:  # the thread outlives anything, a job's or ours
                self.outages.report("processor", exc)
                self._stopping.wait(ERROR_BACKOFF)

    def _process_one(self, tid: str) -> None:
        if self._quiet.is_set():
            self._stopping.wait(QUIET_SLEEP)
            return
        work = self._next_work()
        if work is None:
            return
        if self._stopping.is_set() or self._quiet.is_set():
            self.settler.give_back(work)
            with self._lock:
                self._let_go += 1
            return
        self._run(tid, work)

    def _next_work(self) -> UnitOfWork | None:
        with self._lock:
            if self._prefetched:
                return self._prefetched.popleft()
            self._idle += 1
        try:
            with self._fetch_gate:
                with self._lock:
                    if self._prefetched:
                        return self._prefetched.popleft()
                    wanted = min(self._idle, MAX_PREFETCH)
                if self._stopping.is_set() or self._quiet.is_set():
                    return None
                works = self._fetch(wanted)
        finally:
            with self._lock:
                self._idle -= 1
        if not works:
            return None
        with self._lock:
            self._prefetched.extend(works[1:])
        return works[0]

    def _fetch(self, wanted: int) -> list[UnitOfWork]:
        try:
            works = self.fetcher.fetch(self.app.settings.queues, FETCH_TIMEOUT, wanted)
        except Exception as exc:
            self.outages.report("fetch", exc)
            if isinstance(exc, BrokerUnavailableError):
                self._fetch_uncertain = True
            self._stopping.wait(ERROR_BACKOFF)
            return []
        self.outages.recovered("fetch")
        with self._lock:
            self._taken += len(works)
            if self._fetch_uncertain:
                self._fetch_uncertain = False
                self._stray_checks_due = STRAY_CHECKS
        if not works:
            self.stats.flush()  # idle: publish the last counts now rather than at the next job
        return works

    def _run(self, tid: str, work: UnitOfWork) -> None:
        with self._lock:
            self._busy += 1
            self._running[work.raw] += 1
            self._work[tid] = (work, time.time())
        performed = False

        def on_perform(job: Payload, starting: bool) -> None:
            nonlocal performed
            performed = performed or starting
            self._on_perform(job, starting)

        try:
            assert self.runner is not None
            settlement = self.runner.run(work, on_perform=on_perform)
        except BaseException:
            settlement = self._after_runner_error(work, performed)
        finally:
            with self._lock:
                self._busy -= 1
                self._work.pop(tid, None)
        try:
            self.settler.settle(work, settlement)
        finally:
            with self._lock:
                self._running[work.raw] -= 1
                if self._running[work.raw] <= 0:
                    del self._running[work.raw]
                self._let_go += 1

    @staticmethod
    def _after_runner_error(work: UnitOfWork, performed: bool) -> Settlement:
        """The runner raised (a bug, or a hook it calls): a job that started is settled as
        done, since it may have done its work (scenario 38); one that never started goes
        back to its queue."""
        if performed:
            logger.exception("bookkeeping of jid=%s failed after it ran; acknowledging it (a "
                             "job that ran is not run again)", jid_of(work.raw))
            return ACK
        logger.exception("running jid=%s failed before it could start; handing it back",
                         jid_of(work.raw))
        return GIVE_BACK

    def _on_perform(self, job: Payload, starting: bool) -> None:
        key = f"{threading.get_ident()}:{job.get('jid')}"
        with self._lock:
            if starting:
                self._performing[key] = job
            else:
                self._performing.pop(key, None)

    # shutdown -------------------------------------------------------------------------------
    def stop(self, timeout: float) -> int:
        """Stop fetching, wait up to ``timeout`` for running jobs, requeue the rest."""
        self._quiet.set()
        self._stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0))
        grace = time.monotonic() + FETCH_TIMEOUT + 1
        for thread in self._threads:
            if thread.is_alive() and not self._thread_busy(thread):
                thread.join(max(grace - time.monotonic(), 0))
        self._give_back_prefetched()
        if self.acker is not None:
            self.settler.batch_acks = None  # a job finishing from now on acks by itself
            self.acker.stop()  # every finished job's ack is written before anything requeues
        requeued = self._requeue_unfinished()
        self.stats.flush()
        self.event_loop.close()
        return requeued

    def _thread_busy(self, thread: threading.Thread) -> bool:
        tid = thread.name.rsplit("-", 1)[-1]
        with self._lock:
            return tid in self._work

    def _give_back_prefetched(self) -> None:
        with self._lock:
            works = list(self._prefetched)
            self._prefetched.clear()
        for work in works:
            self.settler.give_back(work)

    def _requeue_unfinished(self) -> int:
        self.settler.retry_pending()
        finished, keep = [], []
        for raw, pending in self.settler.snapshot().items():
            if pending.set_name is None:
                finished.append(raw)
            elif self._park(pending.work, pending.set_name, pending.score, pending.record):
                self.settler.forget(raw)
            else:
                keep.append(raw)
        if not self.fetcher.reliable:
            self._write_work_entries()
        unfinished = self._unfinished_jids(finished, keep)
        try:
            count = self.fetcher.requeue_unfinished(finished, keep)
        except Exception as exc:
            logger.error("requeueing unfinished jobs at shutdown failed: %s", exc)
            return 0
        if count:
            logger.warning("requeued %d job(s) unfinished at shutdown: %s", count,
                           ", ".join(f"jid={jid}" for jid in unfinished) or "?")
        return count

    def _park(self, work: UnitOfWork, set_name: SortedSetName, score: float,
              record: str) -> bool:
        """Hand a failure this process could not file over to the fleet (through the
        fetcher); False when that failed (the record stays pending) or was not ours."""
        try:
            return self.fetcher.park_unsettled(work, set_name, score, record)
        except Exception as exc:
            logger.error("parking an unsettled failure failed: %s", exc)
            return False

    def _unfinished_jids(self, finished: list[str], keep: list[str]) -> list[str]:
        """The jids a shutdown requeue is about to put back, for its log line: what this
        process holds (a strategy that holds jobs) or the threads run, less the rest."""
        try:
            if self.fetcher.holds_jobs():
                held = self.fetcher.in_progress()
            else:
                with self._lock:
                    held = [work.raw for work, _ in self._work.values()]
        except Exception:
            return []
        left = collections.Counter(held)
        left.subtract(collections.Counter([*finished, *keep]))
        return [jid_of(raw) for raw in left.elements()]

    def _write_work_entries(self) -> None:
        identity = self.app.identity
        for tid, work in self.work_entries().items():
            try:
                self.app.broker.processes.set_work(identity, tid, work)
            except Exception as exc:
                logger.error("recording running job of %s failed: %s", tid, exc)

    # reconcile and recovered deaths ---------------------------------------------------------
    def take_stray_check(self) -> bool:
        """Whether the poller should reconcile now, out of turn (after a fetch that may
        have moved jobs nobody knows of); counts the check as taken."""
        with self._lock:
            if self._stray_checks_due <= 0:
                return False
            self._stray_checks_due -= 1
            return True

    def reconcile(self) -> None:
        """Finish pending settlements; requeue jobs this process holds that nobody runs
        (seen twice)."""
        self.settler.retry_pending()
        with self._lock:
            running = set(self._running) | {w.raw for w in self._prefetched}
        if self.acker is not None:
            running |= self.acker.pending_raws()
        pending = set(self.settler.snapshot())
        held = self.fetcher.in_progress()
        strays = {raw for raw in held if raw not in running and raw not in pending}
        for raw in strays & self._previous_strays:
            work = UnitOfWork(queue=_queue_of(raw), raw=raw)
            self.settler.give_back(work)
            logger.warning("requeued stray in-progress job jid=%s", jid_of(raw))
        self._previous_strays = strays - self._previous_strays

    def handle_dead_jobs(self, stored_raws: list[str], reason: str) -> None:
        """Locks and death hooks for jobs another path filed into dead."""
        for raw in stored_raws:
            try:
                job = decode(raw)
            except Exception:
                continue
            release_job_locks(self.app, job, reason)
            message = str(job.get("error_message", reason))
            exc = JobOrphanedError(message) if reason == "orphaned" else JobFailedError(message)
            notify_death(self.app, job, exc)


def _queue_of(raw: str) -> str:
    try:
        return str(decode(raw).get("queue") or "default")
    except Exception:
        return "default"

