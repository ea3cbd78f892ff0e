"""The processor threads of one worker process, and what they share.

Each thread takes its next job from the :class:`~cogworker.worker.intake.Intake` (the fetch
gate and the jobs fetched ahead), runs it, and settles it; the acker writes the acks in
batches. A stop waits for the running jobs, gives back what was fetched and not started,
and requeues what is left.
"""

from __future__ import annotations

import collections
import logging
import secrets
import threading
import time
from typing import TYPE_CHECKING

from cogworker.core.broker import Fetcher, SortedSetName, UnitOfWork, WorkRecord
from cogworker.core.errors import JobFailedError, JobOrphanedError
from cogworker.core.outage import OutageLog
from cogworker.core.payload import Payload, decode
from cogworker.worker.acker import AckBatcher
from cogworker.worker.death import notify_death, release_job_locks
from cogworker.worker.event_loop import EventLoopThread
from cogworker.worker.executor import ACK, GIVE_BACK, JobRunner, Settlement
from cogworker.worker.intake import ERROR_BACKOFF, FETCH_TIMEOUT, Intake
from cogworker.worker.settlement import Settler, jid_of
from cogworker.worker.start_budget import StartBudget
from cogworker.worker.stats_buffer import StatsBuffer

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.manager")

QUIET_SLEEP = 0.5


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
        self.intake = Intake(app, fetcher, outages, self.stats, self._may_fetch, self._stopping)
        self._lock = threading.Lock()
        self._busy = 0
        self._running: collections.Counter[str] = collections.Counter()
        self._work: dict[str, tuple[UnitOfWork, float]] = {}
        self._performing: dict[str, Payload] = {}
        self._previous_strays: set[str] = set()
        self._let_go = 0  # of the jobs fetched, those run to the end or handed back
        self.start_budget: StartBudget | None = None  # --max-jobs: set before start()

    # control --------------------------------------------------------------------------------
    def start(self) -> None:
        self.runner = JobRunner(self.app, self.outages, self.stats, self.event_loop)
        self.acker = AckBatcher(self.settler)
        self.settler.batch_acks = self.acker.submit
        self.intake.start()
        for _ in range(self.app.settings.concurrency):
            tid = secrets.token_hex(6)
            thread = threading.Thread(target=self._loop, args=(tid,), daemon=True,
                                      name=f"cogworker-processor-{tid}")
            self._threads.append(thread)
            thread.start()

    def quiet(self) -> None:
        """Start no job from now on; the jobs fetched ahead go back to their queues now
        (another process may run them meanwhile), the running ones go on."""
        self._quiet.set()
        self._give_back_ready()

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
            let_go = self._let_go
        taken = self.intake.taken
        return taken, taken - let_go

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
            self._give_back_ready()  # a fetch ahead that ended after quiet() gave back
            self._stopping.wait(QUIET_SLEEP)
            return
        work = self.intake.next_work()
        if work is None:
            return
        if self._stopping.is_set() or self._quiet.is_set() or not self._may_start():
            self.settler.give_back(work)
            with self._lock:
                self._let_go += 1
            return
        self._run(tid, work)

    def _may_start(self) -> bool:
        return self.start_budget is None or self.start_budget.take()

    def _may_fetch(self) -> bool:
        return not (self._stopping.is_set() or self._quiet.is_set())

    def _run(self, tid: str, work: UnitOfWork) -> None:
        with self._lock:
            self._busy += 1
            self._running[work.raw] += 1
            self._work[tid] = (work, time.time())
        performed = False
        started = time.monotonic()

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
        self.intake.job_ran(time.monotonic() - started)
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
        grace = time.monotonic() + FETCH_TIMEOUT + 1  # an idle thread's fetch returns by then
        for thread in self._threads:
            if thread.is_alive() and not self._thread_busy(thread):
                thread.join(max(grace - time.monotonic(), 0))
        self.intake.stop()
        self._give_back_ready()
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

    def _give_back_ready(self) -> None:
        works = self.intake.take_ready()
        if works:
            with self._lock:
                self._let_go += len(works)
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
        return self.intake.take_stray_check()

    def reconcile(self) -> None:
        """Finish pending settlements; requeue jobs this process holds that nobody runs
        (seen twice)."""
        self.settler.retry_pending()
        with self._lock:
            running = set(self._running)
        running |= self.intake.ready_raws()
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

