"""The hot path of ``perform_async``: one job onto one queue in one round trip.

The first push of a queue in a while runs ``push.lua`` (register the queue, LPUSH, wake the
workers), atomically. After that, for :data:`REGISTRY_REFRESH` seconds, this client knows
the queue is registered (the registry is never pruned, and every worker's heartbeat
re-registers its queues), so a push is just LPUSH + PUBLISH written together in one frame:
two of Redis's cheapest commands, one round trip, no script to run. The LPUSH is the write
that stores the job; the PUBLISH only wakes idle workers sooner, so its failure never fails
the push: when nobody listened it is left out for :data:`WAKEUP_RECHECK` seconds, and when
the Redis user's ACL refuses the channel, for :data:`REFUSED_RECHECK` seconds (with one
warning saying what to grant).

Those frames go over :class:`~cogworker.redis.push_line.PushLine` connections of the
pusher's own: one per thread pushing at the same moment, reused LIFO, opened with the
client pool's settings but outside its limit (a pushing job never waits for a worker's
connection, nor the reverse), and forgotten in a forked child.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence

import redis

from cogworker.core.settings import DEFAULT_PUSH_BUSY_WAIT
from cogworker.redis.cluster import is_slot_moved
from cogworker.redis.compat import resp2_connection
from cogworker.redis.connection import HEALTH_CHECK_INTERVAL
from cogworker.redis.errors import translate
from cogworker.redis.keys import KeySchema
from cogworker.redis.push_line import PushLine, Reply
from cogworker.redis.replies import wire
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)

REGISTRY_REFRESH = 60.0
WAKEUP_RECHECK = 1.0
REFUSED_RECHECK = 60.0


class Pusher:
    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts, *,
                 busy_wait: float = DEFAULT_PUSH_BUSY_WAIT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._busy_wait = busy_wait
        self._keys = keys
        self._scripts = scripts
        self._clock = clock
        self._unheard_until = 0.0  # no PUBLISH before this: nobody listened, or refused
        self._refusal_reported = False
        self._registered: dict[str, float] = {}
        self._frames: dict[str, tuple[bytes, bytes]] = {}
        self._lines: list[PushLine] = []
        self._lock = threading.Lock()
        _PUSHERS.add(self)

    def push(self, queue: str, raw: str) -> None:
        """Store one job on ``queue``; raises BrokerError/BrokerUnavailableError."""
        now = self._clock()
        if now - self._registered.get(queue, -REGISTRY_REFRESH) < REGISTRY_REFRESH:
            self._push_known(queue, raw, announce=now >= self._unheard_until)
            return
        self._scripts.run("cogworker.redis", "push",
                          [self._keys.queues, self._keys.queue(queue)],
                          [queue, self._keys.wakeup, wire(raw)])
        with self._lock:
            self._registered[queue] = now

    def forget(self) -> None:
        """Register every queue again on its next push."""
        with self._lock:
            self._registered.clear()

    def close(self) -> None:
        """Disconnect the idle push connections (a later push opens one again)."""
        lines, self._lines = self._lines, []
        for line in lines:
            line.close()

    def _push_known(self, queue: str, raw: str, *, announce: bool, moved: bool = False) -> None:
        lpush, publish = self._frame_parts(queue)
        body = wire(raw)
        frame = b"%s$%d\r\n%s\r\n%s" % (lpush, len(body), body, publish if announce else b"")
        try:
            replies = self._exchange(frame, 2 if announce else 1)
        except redis.RedisError as exc:
            raise translate(exc) from exc
        stored = replies[0]
        if not isinstance(stored, int):
            if is_slot_moved(stored) and not moved:
                # A cluster's slot moved: nothing was stored and the line is closed; the
                # next connection asks the cluster for the new owner. Once is enough.
                self._push_known(queue, raw, announce=announce, moved=True)
                return
            raise translate(stored) from stored
        if announce:
            self._note_wakeups(replies[1:])

    def announce(self, queues: Iterable[str]) -> None:
        """PUBLISH a wake-up for each of ``queues``, whose jobs are stored already.

        Best-effort: a failure is logged, never raised (raising would invite the caller to
        push the stored jobs again); idle workers find the jobs at their next timed look.
        """
        names = list(queues)
        if not names or self._clock() < self._unheard_until:
            return
        frame = b"".join(self._frame_parts(name)[1] for name in names)
        try:
            replies = self._exchange(frame, len(names))
        except redis.RedisError as exc:
            logger.warning("wake-up for %s not sent (%s); idle workers find the jobs within "
                           "fetch_idle_max_interval", ", ".join(names), translate(exc))
            return
        self._note_wakeups(replies)

    def _note_wakeups(self, replies: Sequence[Reply]) -> None:
        """What the wake-up PUBLISHes answered decides when to send the next one."""
        refused = next((reply for reply in replies if not isinstance(reply, int)), None)
        if refused is not None:
            self._unheard_until = self._clock() + REFUSED_RECHECK
            self._report_refusal(refused)
        elif all(listeners == 0 for listeners in replies):
            self._unheard_until = self._clock() + WAKEUP_RECHECK
        else:
            self._unheard_until = 0.0

    def _report_refusal(self, reply: redis.ResponseError) -> None:
        if self._refusal_reported:
            return
        self._refusal_reported = True
        logger.warning(
            "Redis refused the wake-up PUBLISH on %s (%s). Jobs are stored all the same; "
            "workers that wait on several queues find them within fetch_idle_max_interval "
            "instead of at once. Wake-ups are tried again every %.0f s.",
            self._keys.wakeup, translate(reply), REFUSED_RECHECK)

    def _frame_parts(self, queue: str) -> tuple[bytes, bytes]:
        """RESP for ``LPUSH <queue key> `` and for ``PUBLISH <wake-up channel> <queue>``
        (built once per queue)."""
        parts = self._frames.get(queue)
        if parts is None:
            parts = self._frames[queue] = (
                _resp(b"LPUSH", self._keys.queue(queue).encode(), count=3),
                _resp(b"PUBLISH", self._keys.wakeup.encode(), queue.encode()))
        return parts

    def _exchange(self, frame: bytes, count: int) -> list[Reply]:
        """Send ``frame`` on a push line of this thread's; the line goes back for reuse
        unless the exchange raised (it is closed then)."""
        line = self._checkout()
        replies = line.exchange(frame, count)
        self._lines.append(line)
        return replies

    def _checkout(self) -> PushLine:
        try:
            return self._lines.pop()  # list.pop is atomic: threads never share a line
        except IndexError:
            # RESP2 whatever the pool speaks, with nothing pushed unasked (no maintenance
            # notifications, no cache): LPUSH, PUBLISH and PING answer one line each.
            connection = resp2_connection(self._client.connection_pool)
            return PushLine(connection, idle_limit=HEALTH_CHECK_INTERVAL,
                            busy_wait=self._busy_wait)


_PUSHERS: weakref.WeakSet[Pusher] = weakref.WeakSet()


def _forget_lines_after_fork() -> None:
    """In a forked child: the parent's push sockets are not ours to use, nor to close."""
    for pusher in list(_PUSHERS):
        pusher._lines = []


os.register_at_fork(after_in_child=_forget_lines_after_fork)


def _resp(*words: bytes, count: int | None = None) -> bytes:
    """The RESP array header for ``count`` words (default: these) and these words."""
    header = b"*%d\r\n" % (len(words) if count is None else count)
    return header + b"".join(b"$%d\r\n%s\r\n" % (len(word), word) for word in words)
