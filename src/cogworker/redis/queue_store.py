"""``broker.queues`` on Redis: queue lists, the registry, pauses, pops and wake-ups.

A queue is the list ``<ns>:queue:<name>``: pushes ``LPUSH`` (the left is the push end),
fetches pop from the right. The registry is the set ``<ns>:queues``, the paused queues the
set ``<ns>:paused_queues``, and wake-ups go over the pub/sub channel ``<ns>:wakeup``. A
single push takes the hot path of :class:`~cogworker.redis.push.Pusher`; anything else is
one MULTI. A pop that meets a key of the wrong type quarantines it
(:class:`~cogworker.redis.quarantine.KeyGuard`) and runs again.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, cast

import redis

from cogworker.core.broker import QueueRecord, Relock, SearchPage, Subscription, UnitOfWork
from cogworker.core.settings import DEFAULT_PUSH_BUSY_WAIT
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.push import Pusher
from cogworker.redis.replies import text, wire
from cogworker.redis.scripts import Scripts

if TYPE_CHECKING:
    from cogworker.redis.quarantine import KeyGuard

LUA_PACKAGE = "cogworker.redis"


def blocking_seconds(timeout: float) -> int | float:
    """A timeout for BRPOP/BLMOVE, whole when it can be (servers before 6.0 accept only
    whole seconds). Raises ValueError when it is not above 0 (Redis reads 0 as forever)."""
    if not timeout > 0:
        raise ValueError(f"a blocking wait needs a timeout above 0 seconds, not {timeout!r} "
                         "(Redis would wait forever)")
    return int(timeout) if float(timeout).is_integer() else timeout


def _check_name(queue: str) -> None:
    if not queue:
        raise ValueError("a queue name must not be empty")


class RedisQueueStore:
    """:class:`cogworker.core.broker.QueueStore` on one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts, *,
                 push_busy_wait: float = DEFAULT_PUSH_BUSY_WAIT) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts
        self.pusher = Pusher(client, keys, scripts, busy_wait=push_busy_wait)

    @functools.cached_property
    def _guard(self) -> KeyGuard:
        """The wrong-type guard of the pops and reads, made at the first (a push needs
        none: a process that only pushes never imports the quarantine's module)."""
        from cogworker.redis.quarantine import KeyGuard

        return KeyGuard(self._client, self._keys, self._scripts)

    # pushing ---------------------------------------------------------------------------
    def store(self, immediate: Sequence[tuple[str, str]],
              scheduled: Sequence[tuple[float, str]]) -> None:
        """A single push through :class:`~cogworker.redis.push.Pusher` (one round trip),
        anything else in one MULTI/EXEC, then the wake-ups (after the MULTI: a refused
        PUBLISH inside it would abort the whole batch)."""
        if not immediate and not scheduled:
            return
        for queue, _raw in immediate:
            _check_name(queue)
        if len(immediate) == 1 and not scheduled:
            self.pusher.push(*immediate[0])
            return
        by_queue: dict[str, list[str]] = {}
        for queue, raw in immediate:
            by_queue.setdefault(queue, []).append(raw)
        pipe = self._client.pipeline(transaction=True)
        if by_queue:
            pipe.sadd(self._keys.queues, *by_queue)
        for queue, raws in by_queue.items():
            pipe.lpush(self._keys.queue(queue), *(wire(raw) for raw in raws))
        if scheduled:
            pipe.zadd(self._keys.schedule, {wire(raw): at for at, raw in scheduled})
        with translate_errors():
            pipe.execute()
        self.pusher.announce(by_queue)

    # reading ---------------------------------------------------------------------------
    def names(self) -> list[str]:
        with translate_errors():
            members: set[bytes | str] = self._client.smembers(self._keys.queues)
        return sorted(text(member) for member in members)

    def records(self, names: Sequence[str] | None = None) -> list[QueueRecord]:
        """One pipeline for the sizes, oldest entries and paused set (with ``names`` None,
        the registry is read first)."""
        chosen = self.names() if names is None else list(names)
        if not chosen:
            return []
        for name in chosen:
            _check_name(name)
        pipe = self._client.pipeline(transaction=False)
        pipe.smembers(self._keys.paused_queues)
        for name in chosen:
            pipe.llen(self._keys.queue(name))
            pipe.lindex(self._keys.queue(name), -1)
        with translate_errors():
            paused_members, *replies = pipe.execute()
        paused = {text(member) for member in paused_members}
        return [QueueRecord(name, int(replies[2 * i]),
                            None if replies[2 * i + 1] is None else text(replies[2 * i + 1]),
                            name in paused)
                for i, name in enumerate(chosen)]

    def size(self, queue: str) -> int:
        _check_name(queue)
        with translate_errors():
            return int(self._client.llen(self._keys.queue(queue)))

    def page(self, queue: str, start: int, count: int, *,
             newest_first: bool = True) -> list[str]:
        _check_name(queue)
        if start < 0 or count < 0:
            raise ValueError(f"a page starts at >= 0 and holds >= 0 jobs, not {start} and "
                             f"{count}")
        if count == 0:
            return []
        key = self._keys.queue(queue)
        with translate_errors():
            if newest_first:
                raws: list[Any] = self._client.lrange(key, start, start + count - 1)
            else:
                raws = self._client.lrange(key, -(start + count), -(start + 1))[::-1]
        return [text(raw) for raw in raws]

    def search(self, queue: str, needle: str, *, start: int = 0, newest_first: bool = True,
               limit: int, window: int) -> SearchPage:
        _check_name(queue)
        from cogworker.redis.search import search_window  # the dashboard's: not a push's

        return search_window(self._scripts, self._keys.queue(queue), "list", needle,
                             start=start, newest_first=newest_first, limit=limit,
                             window=window)

    # changing --------------------------------------------------------------------------
    def remove(self, queue: str, raw: str) -> int:
        _check_name(queue)
        with translate_errors():
            return int(self._client.lrem(self._keys.queue(queue), 0,
                                         cast(str, wire(raw))))  # bytes match exactly

    def clear(self, queue: str) -> int:
        _check_name(queue)
        key = self._keys.queue(queue)
        pipe = self._client.pipeline(transaction=True)
        pipe.llen(key)
        pipe.delete(key)
        with translate_errors():
            return int(pipe.execute()[0])

    def pause(self, queue: str) -> bool:
        _check_name(queue)
        with translate_errors():
            return bool(self._client.sadd(self._keys.paused_queues, queue))

    def resume(self, queue: str) -> bool:
        _check_name(queue)
        with translate_errors():
            return bool(self._client.srem(self._keys.paused_queues, queue))

    def paused(self) -> frozenset[str]:
        """SMEMBERS of the paused set; a paused set of the wrong type is quarantined."""
        def read() -> set[bytes | str]:
            with translate_errors():
                members: set[bytes | str] = self._client.smembers(self._keys.paused_queues)
            return members

        members = self._guard.guarded(read, {self._keys.paused_queues: "set"})
        return frozenset(text(member) for member in members)

    # taking jobs -----------------------------------------------------------------------
    def pop(self, order: Sequence[str], max_jobs: int) -> list[UnitOfWork]:
        queues = list(dict.fromkeys(order))
        if not queues or max_jobs < 1:
            return []
        for queue in queues:
            _check_name(queue)
        keys = [self._keys.queue(queue) for queue in queues]

        def take() -> list[Any]:
            return cast("list[Any]", self._scripts.run(LUA_PACKAGE, "queue_pop", keys,
                                                       [max_jobs]))

        reply = self._guard.guarded(take, dict.fromkeys(keys, "list"))
        return [UnitOfWork(queues[int(reply[i]) - 1], text(reply[i + 1]))
                for i in range(0, len(reply), 2)]

    def pop_blocking(self, order: Sequence[str], timeout: float) -> UnitOfWork | None:
        queues = list(dict.fromkeys(order))
        if not queues:
            raise ValueError("a blocking pop needs at least one queue")
        for queue in queues:
            _check_name(queue)
        seconds = blocking_seconds(timeout)
        keys = [self._keys.queue(queue) for queue in queues]

        def take() -> Any:
            with translate_errors():
                return self._client.brpop(keys, timeout=seconds)

        reply = self._guard.guarded(take, dict.fromkeys(keys, "list"))
        if reply is None:
            return None
        key, raw = reply
        return UnitOfWork(self._keys.queue_name(text(key)), text(raw))

    def push_back(self, work: UnitOfWork, relock: Relock | None = None) -> None:
        """RPUSH onto ``work.queue`` with the lock re-taken and a wake-up, one Lua step."""
        _check_name(work.queue)
        # a worker's (with the lock store's module): off the push path
        from cogworker.redis.requeue_keys import requeue_target

        target = requeue_target(self._keys, work.raw, relock)
        self._scripts.run(
            LUA_PACKAGE, "queue_push_back",
            keys=[self._keys.queue(work.queue), *target.lock_keys()],
            args=[wire(work.raw), target.lock_owner, target.lock_ttl, self._keys.wakeup,
                  work.queue],
        )

    def subscribe_wakeups(self) -> AbstractContextManager[Subscription]:
        from cogworker.redis.pubsub import RedisSubscription  # a worker's: off the push path

        return RedisSubscription.opened(self._client, self._keys.wakeup)

    def close(self) -> None:
        """Disconnect the push connections (they reopen if used again)."""
        self.pusher.close()
