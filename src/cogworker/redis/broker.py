"""``RedisBroker``: the broker contract (:mod:`cogworker.core.broker`) on Redis.

Every Redis call goes through :func:`cogworker.redis.errors.translate_errors`, so callers
only ever see ``BrokerUnavailableError`` (retry later) or ``BrokerError`` (something else is
wrong), with the redis-py exception as ``__cause__``. Graduation, heartbeat records, locks
and subscriptions live in their own modules; this one wires them to one client.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import redis

from cogworker.core.broker import GraduationReport, SortedSetName
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.settings import DEFAULT_PUSH_BUSY_WAIT
from cogworker.redis.errors import translate_errors
from cogworker.redis.graduation import THROUGHPUT_TTL, Graduator
from cogworker.redis.heartbeat_store import HeartbeatStore
from cogworker.redis.keys import KeySchema
from cogworker.redis.locks import RedisLocks, whole_seconds
from cogworker.redis.push import Pusher
from cogworker.redis.replies import as_text
from cogworker.redis.scripts import Scripts
from cogworker.redis.signals import RedisSubscription

logger = logging.getLogger(__name__)

DEFAULT_DEAD_MAX_JOBS = 10_000
DEFAULT_DEAD_TIMEOUT = 180 * 86_400.0  # six months, in seconds
UNKNOWN_VERSION = (99,)  # an unreadable version is assumed to be a modern server
_VERSION_RE = re.compile(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?")


class RedisBroker:
    """:class:`cogworker.core.broker.Broker` on one Redis client.

    ``locks`` is the :class:`RedisLocks` (``LockBackend``) of the same client; ``scripts``
    runs the ``.lua`` files of any package on it. The dead set is capped on every write
    to it: at most ``dead_max_jobs`` entries, none older than ``dead_timeout`` seconds.
    A push busy-waits up to ``push_busy_wait`` seconds for its reply
    (:mod:`cogworker.redis.line_socket`).
    """

    def __init__(
        self,
        client: redis.Redis,
        keys: KeySchema,
        *,
        dead_max_jobs: int = DEFAULT_DEAD_MAX_JOBS,
        dead_timeout: float = DEFAULT_DEAD_TIMEOUT,
        push_busy_wait: float = DEFAULT_PUSH_BUSY_WAIT,
    ) -> None:
        self.client = client
        self.keys = keys
        self.dead_max_jobs = dead_max_jobs
        self.dead_timeout = dead_timeout
        self.scripts = Scripts(client)
        self.locks = RedisLocks(client, self.scripts)
        self._graduator = Graduator(client, keys, self.scripts)
        self._heartbeats = HeartbeatStore(client, keys, self.scripts)
        self._pusher = Pusher(client, keys, self.scripts, busy_wait=push_busy_wait)

    # client side -------------------------------------------------------------------------
    def store(self, immediate: Sequence[tuple[str, str]],
              scheduled: Sequence[tuple[float, str]]) -> None:
        """Push and schedule jobs: a single push through
        :class:`~cogworker.redis.push.Pusher` (one round trip), anything else in one
        MULTI/EXEC, then the wake-ups.

        Raws of one queue go in one LPUSH in the given order; fetchers pop from the right,
        so the first given is the first fetched. Each queue touched is registered in the
        transaction, and announced on the wake-up channel after it (best-effort, through
        :meth:`Pusher.announce <cogworker.redis.push.Pusher.announce>`).
        """
        if not immediate and not scheduled:
            return
        if len(immediate) == 1 and not scheduled:
            self._pusher.push(*immediate[0])
            return
        by_queue: dict[str, list[str]] = {}
        for queue, raw in immediate:
            by_queue.setdefault(queue, []).append(raw)
        pipe = self.client.pipeline(transaction=True)
        if by_queue:
            pipe.sadd(self.keys.queues, *by_queue)
        for queue, raws in by_queue.items():
            pipe.lpush(self.keys.queue(queue), *raws)
        if scheduled:
            pipe.zadd(self.keys.schedule, {raw: at for at, raw in scheduled})
        with translate_errors():
            pipe.execute()
        # After, not inside, the MULTI: a refused PUBLISH there would abort the whole batch.
        self._pusher.announce(by_queue)

    # worker side -------------------------------------------------------------------------
    def server_time(self) -> float:
        with translate_errors():
            seconds, micros = self.client.time()
        return int(seconds) + int(micros) / 1_000_000

    def server_version(self) -> tuple[int, ...]:
        """``redis_version`` from INFO, e.g. (7, 2, 4); (99,) when it cannot be read."""
        with translate_errors():
            info = self.client.info("server")
        match = _VERSION_RE.match(str(info.get("redis_version", "")))
        if match is None:
            logger.warning("unreadable Redis version %r; assuming a modern server",
                           info.get("redis_version"))
            return UNKNOWN_VERSION
        return tuple(int(part) for part in match.groups() if part is not None)

    def paused_queues(self) -> set[str]:
        with translate_errors():
            members: set[bytes | str] = self.client.smembers(self.keys.paused_queues)
        return {as_text(member) for member in members}

    def file_job(self, set_name: SortedSetName, score: float, raw: str) -> None:
        """ZADD ``raw`` into the set; for dead, trim by age and count in the same MULTI."""
        key = self.keys.sorted_set(set_name)
        if set_name != "dead":
            with translate_errors():
                self.client.zadd(key, {raw: score})
            return
        oldest_kept = time.time() - self.dead_timeout
        pipe = self.client.pipeline(transaction=True)
        pipe.zadd(key, {raw: score})
        pipe.zremrangebyscore(key, "-inf", f"({oldest_kept!r}")
        pipe.zremrangebyrank(key, 0, -(self.dead_max_jobs + 1))
        with translate_errors():
            pipe.execute()

    def record_outcomes(self, processed: int, failed: int, now: float) -> None:
        """INCRBY the totals and HINCRBY this hour's throughput (kept 25 h), one MULTI."""
        counts = {"processed": processed, "failed": failed}
        counts = {name: count for name, count in counts.items() if count}
        if not counts:
            return
        hour_key = self.keys.throughput(int(now // 3600))
        totals = {"processed": self.keys.stats_processed, "failed": self.keys.stats_failed}
        pipe = self.client.pipeline(transaction=True)
        for name, count in counts.items():
            pipe.incrby(totals[name], count)
            pipe.hincrby(hour_key, name, count)
        pipe.expire(hour_key, THROUGHPUT_TTL)
        with translate_errors():
            pipe.execute()

    def set_work(self, identity: str, tid: str, entry: str) -> None:
        with translate_errors():
            self.client.hset(self.keys.workers(identity), tid, entry)

    def clear_work(self, identity: str, tid: str) -> None:
        with translate_errors():
            self.client.hdel(self.keys.workers(identity), tid)

    def replace_work(self, identity: str, entries: Mapping[str, str], ttl: float) -> None:
        key = self.keys.workers(identity)
        with translate_errors():
            pipe = self.client.pipeline(transaction=True)
            pipe.delete(key)
            if entries:
                pipe.hset(key, mapping=dict[Any, Any](entries))
                pipe.expire(key, whole_seconds(ttl))
            pipe.execute()

    def graduate(self, set_name: Literal["schedule", "retry"], now: float,
                 limit: int) -> GraduationReport:
        return self._graduator.graduate(set_name, now, limit)

    def requeue_entry(self, set_name: SortedSetName, raw: str | bytes, new_raw: str,
                      queue: str) -> bool:
        """Move one entry of a set onto ``queue`` as ``new_raw`` (atomic, "retry now").

        False when ``raw`` is no longer in the set."""
        return self._graduator.requeue_entry(set_name, raw, new_raw, queue)

    def beat(
        self, identity: str, info: str, busy: int, quiet: bool,
        queues: Sequence[str], ttl: float, reliable: bool,
    ) -> None:
        self._heartbeats.beat(identity, info=info, busy=busy, quiet=quiet, queues=queues,
                              ttl=ttl, reliable=reliable)

    def remove_process(self, identity: str) -> None:
        self._heartbeats.remove_process(identity)

    # remote control ----------------------------------------------------------------------
    @contextmanager
    def subscribe_signals(self, identity: str) -> Iterator[RedisSubscription]:
        """Subscribe to ``identity``'s signal channel on a dedicated connection."""
        subscription = RedisSubscription.open(self.client, self.keys.signal(identity))
        try:
            yield subscription
        finally:
            subscription.close()

    @contextmanager
    def subscribe_wakeups(self) -> Iterator[RedisSubscription]:
        """Subscribe to the wake-up channel: each message is the name of a queue that just
        received work."""
        subscription = RedisSubscription.open(self.client, self.keys.wakeup)
        try:
            yield subscription
        finally:
            subscription.close()

    def publish_signal(self, identity: str, message: str) -> int:
        with translate_errors():
            return int(self.client.publish(self.keys.signal(identity), message))

    # connection --------------------------------------------------------------------------
    def ping(self) -> bool:
        """True when Redis answers PING; False when it cannot be reached."""
        try:
            with translate_errors():
                return bool(self.client.ping())
        except BrokerUnavailableError:
            return False

    def close(self) -> None:
        """Disconnect every pooled and push connection (they reopen if used again)."""
        self._pusher.close()
        self.client.connection_pool.disconnect()
