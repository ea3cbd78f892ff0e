"""A live pub/sub-like subscription: wake-ups (queue names) or one process's signals."""

from __future__ import annotations

from typing import Protocol


class Subscription(Protocol):
    """Messages on one channel, from the moment the subscription was confirmed.

    Nothing is queued for a subscriber that is not listening: a message sent before the
    subscription was confirmed, or while its connection was down, is lost. So a
    subscription is a way to react sooner, never the only way to learn something.

    Threading: :meth:`get` belongs to one thread; :meth:`close` may be called from another
    once that thread stopped reading.
    """

    def get(self, timeout: float) -> str | None:
        """The next message, or None after ``timeout`` seconds without one.

        A lost connection is re-established once, transparently (messages sent meanwhile
        are lost); raises ``BrokerUnavailableError`` when that fails.
        """
        ...

    def close(self) -> None:
        """Drop the subscription and its connection. Idempotent; never raises."""
        ...
