"""``StreamsFetcher``: a :class:`~cogworker.core.broker.Fetcher` on Redis Streams consumer
groups.

Pushes stay on the queue lists (every writer of a queue writes its list: pushes,
graduation, "retry now", give-backs, recoveries, a Ruby fleet). A fetch moves jobs from the
pop end of each open queue into the queue's stream and delivers them to this process's
consumer in the same atomic step (``lua/fetch.lua``): a job is always on its queue or
pending to exactly one consumer, never nowhere. Settling a job acknowledges and deletes its
entry in the step that writes where the job goes (``lua/settle.lua``); the entries of a
dead consumer are recovered by every live process (:mod:`cogworker_streams.recovery`).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

from cogworker.core.broker import (
    RecoveryOptions,
    RecoveryReport,
    Relock,
    SortedSetName,
    UnitOfWork,
    WakeupListener,
)
from cogworker.core.errors import BrokerError, BrokerUnavailableError, UnsupportedCommandError
from cogworker_streams.deliveries import Deliveries, read_pending
from cogworker_streams.names import (
    GROUP,
    PACKAGE,
    Held,
    RedisBackedBroker,
    StreamKeys,
    entry_order,
    text,
)
from cogworker_streams.recovery import StreamsRecovery
from cogworker_streams.settle import Outcome, SettleBatch

logger = logging.getLogger(__name__)

_Fill = Callable[[SettleBatch, Held], None]

MIN_SERVER = (5, 0)
"""Redis Streams and consumer groups came with Redis 5.0."""
ALL_PAUSED_PAUSE = 2.0
"""Seconds a fetch waits (at most its timeout) when every queue it reads is paused."""


def fetch_order(queues: Sequence[str], rng: random.Random) -> list[str]:
    """The distinct queue names in the order to try them: the weighted list (repetition is
    weight) shuffled, then de-duplicated by first occurrence."""
    shuffled = list(queues)
    rng.shuffle(shuffled)
    return list(dict.fromkeys(shuffled))


class StreamsFetcher:
    """Fetches into stream consumer groups; shared by every processor thread of a process.

    Fetches are serialized (one thread inside :meth:`fetch` at a time); settling calls may
    run from any thread. The server's version is asked on the first fetch.
    """

    name = "streams"
    reliable = True

    def __init__(self, broker: RedisBackedBroker, identity: str, relock: Relock, *,
                 idle_max_interval: float = 1.0, rng: random.Random | None = None) -> None:
        self._broker = broker
        self._keys = StreamKeys(broker.keys)
        self.identity = identity
        self._relock = relock
        self.idle_max_interval = idle_max_interval
        self._rng = rng or random.Random()
        self._deliveries = Deliveries()
        self._recovery = StreamsRecovery(broker, self._keys, identity, relock)
        self._wakeups = WakeupListener(broker.queues, thread_name="cogworker-streams-wakeup")
        # whose streams may hold entries of ours; replaced, never changed in place, so other
        # threads read it without a lock
        self._queues_seen: frozenset[str] = frozenset()
        self._fetch_lock = threading.Lock()
        self._closed = threading.Event()
        self._unsupported: str | None = None
        self._version_checked = False
        self._unusable_logged: set[str] = set()

    # fetching -------------------------------------------------------------------------
    def holds_jobs(self) -> bool:
        """Always True: every job this process took is pending to its consumer until
        settled, so every beat must stamp the last beat that keeps recovery away."""
        return True

    def fetch(self, queues: Sequence[str], timeout: float, max_jobs: int = 1) -> list[UnitOfWork]:
        """Take up to ``max_jobs`` jobs, waiting up to ``timeout`` seconds for the first."""
        with self._fetch_lock:
            if self._closed.is_set():
                return []
            self._check_server()
            order = fetch_order(queues, self._rng)
            works, open_queues = self._take(order, max(max_jobs, 1))
            if works:
                return works
            if not open_queues:
                self._closed.wait(min(timeout, ALL_PAUSED_PAUSE))
                return []
            return self._wait_for_wakeups(order, open_queues, timeout, max(max_jobs, 1))

    def _check_server(self) -> None:
        if not self._version_checked:
            try:
                version = self._broker.server_version()
            except BrokerUnavailableError:
                raise
            except BrokerError as exc:
                logger.debug("could not read the Redis version (%s); assuming >= 5.0", exc)
                version = None
            if version is not None and version < MIN_SERVER:
                self._unsupported = (f"Redis {'.'.join(map(str, version))} < 5.0 has no "
                                     "Streams: the streams fetch strategy needs Redis 5.0 or "
                                     "newer (run without --plugin streams instead)")
            self._version_checked = True
        if self._unsupported is not None:
            raise UnsupportedCommandError(self._unsupported)

    def _wait_for_wakeups(self, order: Sequence[str], open_queues: Sequence[str],
                          timeout: float, max_jobs: int) -> list[UnitOfWork]:
        deadline = time.monotonic() + timeout
        self._wakeups.watch(open_queues)
        while True:
            self._wakeups.clear()  # before looking: a push after the look still wakes us
            works, _ = self._take(order, max_jobs)
            remaining = deadline - time.monotonic()
            if works or remaining <= 0 or self._closed.is_set():
                return works
            self._wakeups.wait(min(remaining, self.idle_max_interval))

    def _take(self, order: Sequence[str], max_jobs: int) -> tuple[list[UnitOfWork], list[str]]:
        """One round trip: deliver up to ``max_jobs`` jobs from the open queues of
        ``order``, in that order. Returns the jobs and those open queues."""
        if not order:
            return [], []
        # recorded before the call: a lost reply hides entries that in_progress must find
        if not self._queues_seen.issuperset(order):
            self._queues_seen = self._queues_seen | frozenset(order)
        schema = self._keys.schema
        keys = [schema.paused_queues, self._keys.registry]
        for queue in order:
            keys += [schema.queue(queue), self._keys.stream(queue)]
        reply = self._broker.scripts.run(PACKAGE, "fetch", keys=keys,
                                         args=[GROUP, self.identity, max_jobs, *order])
        open_count, unusable_count = int(reply[0]), int(reply[1])
        positions = [order[int(p) - 1] for p in reply[2:2 + open_count + unusable_count]]
        self._note_unusable(positions[open_count:])
        flat = reply[2 + open_count + unusable_count:]
        works = []
        for i in range(0, len(flat), 3):
            held = Held(order[int(flat[i]) - 1], text(flat[i + 1]), text(flat[i + 2]))
            self._deliveries.add(held)
            works.append(UnitOfWork(held.queue, text(flat[i + 2])))
        return works, positions[:open_count]

    def _note_unusable(self, queues: Sequence[str]) -> None:
        for queue in queues:
            if queue not in self._unusable_logged:
                self._unusable_logged.add(queue)
                logger.error("queue %s is skipped: its list %s or its stream %s holds a "
                             "value of another type; move that key aside to fetch from it "
                             "again", queue, self._keys.schema.queue(queue),
                             self._keys.stream(queue))

    # settling -------------------------------------------------------------------------
    def _held(self, work: UnitOfWork) -> Held | None:
        """The entry behind ``work``, reserved for the caller; looked up in the pending
        entries when this process does not know it (a lost fetch reply, a stray)."""
        held = self._deliveries.take(work)
        if held is None:
            queues = sorted(self._queues_seen | {work.queue})
            self._deliveries.merge(read_pending(self._broker.scripts, self._keys, queues,
                                                self.identity))
            held = self._deliveries.take(work)
        return held

    def _settle_one(self, work: UnitOfWork, fill: _Fill, what: str) -> bool:
        held = self._held(work)
        if held is None:
            return False
        batch = SettleBatch(self._keys, self.identity)
        fill(batch, held)
        try:
            [outcome] = batch.run(self._broker.scripts)
        except BaseException:
            self._deliveries.release([held])
            raise
        self._deliveries.done([held])
        if outcome is Outcome.REFUSED:
            raise BrokerError(f"{what} of a job of queue {work.queue} was refused (a key of "
                              "another type); the job stays held")
        return outcome is Outcome.SETTLED

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        """Drop settled jobs (and their orphan counters) in one step; raises BrokerError."""
        batch = SettleBatch(self._keys, self.identity)
        for work in works:
            held = self._held(work)
            if held is not None:
                batch.ack(held)
        try:
            batch.run(self._broker.scripts)
        except BaseException:
            self._deliveries.release(batch.entries)
            raise
        self._deliveries.done(batch.entries)

    def give_back(self, work: UnitOfWork) -> bool:
        """Requeue a job that did not start at the pop end of its queue; False if it is
        no longer this process's."""
        return self._settle_one(
            work, lambda batch, held: batch.requeue(held, self._relock(work.raw)), "a give-back")

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        """File ``record`` into ``set_name`` and drop the job, one atomic step; False (and
        nothing written) if it is no longer this process's."""
        return self._settle_one(
            work, lambda batch, held: batch.file(held, set_name, score, record), "filing")

    def park_unsettled(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                       record: str) -> bool:
        """Hand an unfiled failure over to any live process and drop the job, one atomic
        step; False if it is no longer this process's."""
        hand_over = json.dumps({"set": self._keys.schema.sorted_set(set_name), "score": score,
                                "payload": record}, separators=(",", ":"), ensure_ascii=False)
        return self._settle_one(
            work, lambda batch, held: batch.park(held, hand_over), "the hand-over")

    def in_progress(self) -> list[str]:
        """The raws pending to this process's consumer, most recently taken first."""
        entries = read_pending(self._broker.scripts, self._keys, sorted(self._queues_seen),
                               self.identity)
        self._deliveries.merge(entries)
        entries.sort(key=lambda held: entry_order(held.entry_id), reverse=True)
        return [held.raw for held in entries if held.raw is not None]

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        """Shutdown, one atomic step: drop ``finished``, keep ``keep``, and put every other
        job this process holds back on the pop end of its queue (the earliest taken runs
        first again). Returns how many were requeued."""
        entries = read_pending(self._broker.scripts, self._keys, sorted(self._queues_seen),
                               self.identity)
        entries.sort(key=lambda held: entry_order(held.entry_id), reverse=True)
        to_drop, to_keep = Counter(finished), Counter(keep)
        batch = SettleBatch(self._keys, self.identity)
        for held in entries:
            if held.raw is None:
                continue
            if to_drop[held.raw] > 0:
                to_drop[held.raw] -= 1
                batch.ack(held)
            elif to_keep[held.raw] > 0:
                to_keep[held.raw] -= 1
            else:
                batch.requeue(held, self._relock(held.raw))
        outcomes = batch.run(self._broker.scripts)
        refused = outcomes.count(Outcome.REFUSED)
        if refused:
            logger.error("%d job(s) could not be requeued at shutdown (their queue key is "
                         "unusable); they stay pending for orphan recovery", refused)
        return sum(1 for outcome, action in zip(outcomes, batch.actions, strict=True)
                   if action == "requeue" and outcome is Outcome.SETTLED)

    # recovery and the end -------------------------------------------------------------
    def recover_orphans(self, own_identity: str, options: RecoveryOptions) -> RecoveryReport:
        """Recover the entries of dead consumers, then the broker's held jobs, repeat
        orphans and handed-over failures; never raises a BrokerError (see the report)."""
        return self._recovery.recover_orphans(own_identity, options)

    def recover_process(self, identity: str, options: RecoveryOptions) -> RecoveryReport:
        """Recover the entries of ``identity``, which something outside Redis vouches is
        dead: no liveness check. Never raises a BrokerError."""
        return self._recovery.recover_process(identity, options)

    def close(self) -> None:
        """Stop the wake-up thread and end waits early. Idempotent."""
        self._closed.set()
        self._wakeups.close()
