"""``broker.held`` on Redis: jobs a process holds on its list ``inprogress:<identity>``.

Every settling step is one Lua script, so a job is always either on the list or written
where it goes next (a queue, retry/dead, the unsettled hand-over), never nowhere: the write
comes first, the removal second, and a removal only happens while the raw is still held.
A claim moves jobs from the pop ends of the queues onto the head of the list
(``held_claim.lua`` for a batch, ``BLMOVE`` to wait on one queue). Recovery of the lists
of dead processes is :mod:`cogworker.redis.held_recovery`'s; filing what they handed over
is :mod:`cogworker.redis.filing`'s.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, cast

import redis

from cogworker.core.broker import (
    ClaimBatch,
    RecoveryOptions,
    RecoveryReport,
    Relock,
    SortedSetName,
    UnitOfWork,
)
from cogworker.core.errors import BrokerError, BrokerFullError, BrokerUnavailableError
from cogworker.redis.errors import translate_errors
from cogworker.redis.filing import bury_repeat_orphans, file_unsettled, unsettled_record
from cogworker.redis.held_recovery import Recovery
from cogworker.redis.keys import KeySchema
from cogworker.redis.lanes import ACKNOWLEDGEMENTS, CLAIMS
from cogworker.redis.quarantine import KeyGuard
from cogworker.redis.queue_store import blocking_seconds
from cogworker.redis.replies import text, wire
from cogworker.redis.requeue_keys import counter_key, requeue_target, settled_counter_key
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)

LUA_PACKAGE = "cogworker.redis"
MIN_VERSION = (6, 2)
"""LMOVE/BLMOVE, which holding jobs needs, came with Redis 6.2."""


class RedisHeldJobStore:
    """:class:`cogworker.core.broker.HeldJobStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts,
                 server_version: Callable[[], tuple[int, ...]]) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts
        self._server_version = server_version
        self._guard = KeyGuard(client, keys, scripts)
        self._recovery = Recovery(client, keys, scripts)

    def supported(self) -> str | None:
        try:
            version = self._server_version()
        except BrokerUnavailableError:
            raise
        except BrokerError as exc:
            logger.debug("could not read the Redis version (%s); assuming >= 6.2", exc)
            return None
        if version < MIN_VERSION:
            return f"Redis {'.'.join(map(str, version))} < 6.2 has no LMOVE"
        return None

    def _run(self, name: str, holder: str, keys: Sequence[str],
             args: Sequence[str | bytes | float | int], lane: str | None = None) -> Any:
        return self._scripts.run(LUA_PACKAGE, name, keys=[self._keys.inprogress(holder), *keys],
                                 args=args, lane=lane)

    # claiming --------------------------------------------------------------------------
    def claim(self, holder: str, order: Sequence[str], max_jobs: int) -> ClaimBatch:
        if max_jobs < 1:
            raise ValueError(f"a claim takes at least 1 job, not {max_jobs}")
        queues = list(dict.fromkeys(order))
        if not queues:
            return ClaimBatch((), ())
        keys = self._keys
        held = keys.inprogress(holder)
        queue_keys = [keys.queue(queue) for queue in queues]

        def take(full: int) -> list[Any]:
            return cast("list[Any]", self._scripts.run(
                LUA_PACKAGE, "held_claim", keys=[keys.paused_queues, *queue_keys, held],
                args=[max_jobs, full, *queues], lane=CLAIMS))

        expected = {keys.paused_queues: "set", held: "list",
                    **dict.fromkeys(queue_keys, "list")}
        try:
            reply = self._guard.guarded(lambda: take(0), expected)
        except BrokerFullError:  # refused at its first write: nothing moved; mark and retry
            reply = self._guard.guarded(lambda: take(1), expected)
        count = int(reply[0])
        open_queues = tuple(queues[int(position) - 1] for position in reply[1:count + 1])
        flat = reply[count + 1:]
        works = tuple(UnitOfWork(keys.queue_name(text(flat[i])), text(flat[i + 1]))
                      for i in range(0, len(flat), 2))
        return ClaimBatch(works, open_queues)

    def claim_blocking(self, holder: str, queue: str, timeout: float) -> UnitOfWork | None:
        if not queue:
            raise ValueError("a queue name must not be empty")
        seconds = blocking_seconds(timeout)
        source, held = self._keys.queue(queue), self._keys.inprogress(holder)

        def take() -> Any:
            with translate_errors():
                # redis-py types the timeout as int; servers take fractions since 6.0
                return self._client.blmove(source, held, cast(int, seconds), "RIGHT", "LEFT")

        raw = self._guard.guarded(take, {source: "list", held: "list"})
        return None if raw is None else UnitOfWork(queue, text(raw))

    def held(self, holder: str) -> list[str]:
        with translate_errors():
            entries: list[bytes | str] = self._client.lrange(self._keys.inprogress(holder),
                                                             0, -1)
        return [text(entry) for entry in entries]

    # settling --------------------------------------------------------------------------
    def release(self, holder: str, works: Sequence[UnitOfWork]) -> int:
        """Drop settled jobs, and the orphan counters of those still held, in one step (a
        superseded run's late release leaves the counter to the run that superseded it)."""
        if not works:
            return 0
        counters = [settled_counter_key(self._keys, work.raw) for work in works]
        return int(self._run("held_release", holder, counters, [wire(w.raw) for w in works],
                             lane=ACKNOWLEDGEMENTS))

    def return_to_queue(self, holder: str, work: UnitOfWork,
                        relock: Relock | None = None) -> bool:
        target = requeue_target(self._keys, work.raw, relock)
        return int(self._run(
            "held_return", holder, [target.queue_key, *target.lock_keys()],
            [wire(work.raw), target.lock_owner, target.lock_ttl, self._keys.wakeup,
             target.queue],
        )) == 1

    def file(self, holder: str, work: UnitOfWork, set_name: SortedSetName, score: float,
             record: str) -> bool:
        return int(self._run(
            "held_file", holder,
            [self._keys.sorted_set(set_name), counter_key(self._keys, work.raw)],
            [wire(work.raw), score, wire(record)],
        )) == 1

    def park(self, holder: str, work: UnitOfWork, set_name: SortedSetName, score: float,
             record: str) -> bool:
        handed = unsettled_record(self._keys, set_name, score, record)
        return int(self._run("held_park", holder, [self._keys.unsettled],
                             [wire(work.raw), wire(handed)])) == 1

    def hand_over(self, set_name: SortedSetName, score: float, record: str) -> None:
        handed = unsettled_record(self._keys, set_name, score, record)
        with translate_errors():
            self._client.rpush(self._keys.unsettled, wire(handed))

    def requeue_all(self, holder: str, finished: Sequence[str], keep: Sequence[str],
                    relock: Relock | None = None) -> int:
        """One Lua step that drops ``finished`` raws (with their orphan counters), leaves
        ``keep`` raws held and requeues every other held job."""
        done, kept = Counter(finished), Counter(keep)
        extra_keys: dict[str, int] = {}

        def index(key: str) -> int:
            return extra_keys.setdefault(key, len(extra_keys) + 2)  # KEYS[1] is the list

        groups: list[str | bytes | int] = []
        for raw in self.held(holder):
            if done[raw] > 0:
                done[raw] -= 1
                groups += ["d", wire(raw), index(counter_key(self._keys, raw)), 0, "", "", 1]
            elif kept[raw] > 0:
                kept[raw] -= 1
            else:
                target = requeue_target(self._keys, raw, relock)
                lock = index(target.lock_key) if target.lock_key else 0
                groups += ["r", wire(raw), index(target.queue_key), lock, target.lock_owner,
                           target.queue, target.lock_ttl]
        if not groups:
            return 0
        held = self._keys.inprogress(holder)
        requeued, failed = self._scripts.run(LUA_PACKAGE, "held_requeue_all",
                                             keys=[held, *extra_keys],
                                             args=[self._keys.wakeup, *groups])
        if failed:
            logger.error("%d job(s) of %s could not be requeued at shutdown (their queue key "
                         "is unusable); they stay there and orphan recovery retries them",
                         failed, held)
        return int(requeued)

    # recovery --------------------------------------------------------------------------
    def recover_orphans(self, own_identity: str, options: RecoveryOptions,
                        relock: Relock | None = None) -> RecoveryReport:
        return self._recovery.recover_orphans(own_identity, options, relock)

    def recover_process(self, holder: str, options: RecoveryOptions,
                        relock: Relock | None = None) -> RecoveryReport:
        return self._recovery.recover_process(holder, options, relock)

    def bury_repeat_orphans(self, now: float, max_orphanings: int) -> list[str]:
        return bury_repeat_orphans(self._client, self._keys, self._scripts, now,
                                   max_orphanings=max_orphanings)

    def file_unsettled(self) -> list[tuple[SortedSetName, str]]:
        return file_unsettled(self._client, self._keys, self._scripts)
