"""In-process channels: the memory broker's wake-ups and remote-control signals.

A message reaches the subscriptions open on its channel when it is published, and nobody
else: as on Redis pub/sub, nothing is kept for a subscriber that comes later.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class MemorySubscription:
    """Messages of one channel from the moment it was opened (a ``Subscription``)."""

    def __init__(self, channels: Channels, channel: str) -> None:
        self._channels = channels
        self.channel = channel
        self._messages: queue.SimpleQueue[str] = queue.SimpleQueue()

    def deliver(self, message: str) -> None:
        self._messages.put(message)

    def get(self, timeout: float) -> str | None:
        """The next message, or None after ``timeout`` seconds without one."""
        try:
            return self._messages.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None

    def close(self) -> None:
        """Stop receiving. Idempotent."""
        self._channels.drop(self)


class Channels:
    """Every open subscription by channel name, guarded by the broker's lock."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._open: dict[str, list[MemorySubscription]] = {}

    @contextmanager
    def subscribe(self, channel: str) -> Iterator[MemorySubscription]:
        """A subscription to ``channel``, open (confirmed) inside the block."""
        subscription = MemorySubscription(self, channel)
        with self._lock:
            self._open.setdefault(channel, []).append(subscription)
        try:
            yield subscription
        finally:
            subscription.close()

    def publish(self, channel: str, message: str) -> int:
        """Deliver ``message`` to every open subscription of ``channel``; how many."""
        with self._lock:
            receivers = list(self._open.get(channel, ()))
        for subscription in receivers:
            subscription.deliver(message)
        return len(receivers)

    def drop(self, subscription: MemorySubscription) -> None:
        with self._lock:
            listening = self._open.get(subscription.channel, [])
            if subscription in listening:
                listening.remove(subscription)
            if not listening:
                self._open.pop(subscription.channel, None)
