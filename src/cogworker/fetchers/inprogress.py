"""Settling jobs held on a reliable-fetch process's own in-progress list.

Every operation is one Lua script, so a job is always either on the list or written where
it goes next (a queue, retry/dead, the unsettled hand-over), never nowhere: the write comes
first, the removal second, and a removal only happens while the raw is still held.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from cogworker.core.broker import SortedSetName, UnitOfWork
from cogworker.redis.errors import translate_errors
from cogworker.redis.requeue import RedisBackend, counter_key, requeue_target, text, wire

logger = logging.getLogger(__name__)

PACKAGE = "cogworker.fetchers"
RECOVERY_PACKAGE = "cogworker.redis"


class InProgressList:
    """The ``inprogress:<identity>`` list of one process and the ways to settle its jobs."""

    def __init__(self, backend: RedisBackend, identity: str, queued_ttl: int) -> None:
        self._backend = backend
        self._keys = backend.keys
        self.identity = identity
        self.key = backend.keys.inprogress(identity)
        self.queued_ttl = queued_ttl

    def _run(self, name: str, keys: Sequence[str], args: Sequence[str | bytes | float]) -> int:
        return int(self._backend.scripts.run(PACKAGE, name, keys=[self.key, *keys], args=args))

    def in_progress(self) -> list[str]:
        """The raws held, most recently fetched first."""
        with translate_errors():
            entries: list[bytes | str] = self._backend.client.lrange(self.key, 0, -1)
        return [text(entry) for entry in entries]

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        """Drop settled jobs, and the orphan counters of those still held, in one step (a
        superseded run's late ack leaves the counter to the run that superseded it)."""
        if not works:
            return
        counters = [counter_key(self._keys, w.raw) for w in works]
        self._run("ack", counters, [wire(w.raw) for w in works])

    def give_back(self, work: UnitOfWork) -> bool:
        """Requeue a held job at the head of its queue (lock re-taken), then drop it."""
        target = requeue_target(self._keys, work.raw)
        return self._run(
            "requeue_one", [target.queue_key, *target.lock_keys()],
            [wire(work.raw), target.jid, self.queued_ttl, self._keys.wakeup, target.queue],
        ) == 1

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        """File ``record`` into retry/dead and drop the held raw; False if not held."""
        return self._run(
            "interrupt",
            [self._keys.sorted_set(set_name), counter_key(self._keys, work.raw)],
            [wire(work.raw), score, wire(record)],
        ) == 1

    def park_unsettled(self, raw: str, record_json: str) -> bool:
        """Move a held job's unfiled failure record onto the unsettled list; False if the
        raw is no longer held."""
        return self._run("park_unsettled", [self._keys.unsettled],
                         [wire(raw), wire(record_json)]) == 1

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        """Shutdown: one atomic step that drops ``finished`` raws (with their orphan
        counters), leaves ``keep`` raws held and requeues every other held job, the
        earliest fetched nearest the pop end. Returns how many were requeued."""
        done, held = Counter(finished), Counter(keep)
        extra_keys: dict[str, int] = {}

        def index(key: str) -> int:
            return extra_keys.setdefault(key, len(extra_keys) + 2)  # KEYS[1] is the list

        groups: list[str | bytes | int] = []
        for raw in self.in_progress():
            target = requeue_target(self._keys, raw)
            if done[raw] > 0:
                done[raw] -= 1
                groups += ["d", wire(raw), index(target.counter_key), 0, "", ""]
            elif held[raw] > 0:
                held[raw] -= 1
            else:
                lock = index(target.lock_key) if target.lock_key else 0
                groups += ["r", wire(raw), index(target.queue_key), lock, target.jid,
                           target.queue]
        if not groups:
            return 0
        requeued, failed = self._backend.scripts.run(
            RECOVERY_PACKAGE, "requeue_in_progress", keys=[self.key, *extra_keys],
            args=[self.queued_ttl, self._keys.wakeup, *groups],
        )
        if failed:
            logger.error("%d job(s) of %s could not be requeued at shutdown (their queue key "
                         "is unusable); they stay there and orphan recovery retries them",
                         failed, self.key)
        return int(requeued)
