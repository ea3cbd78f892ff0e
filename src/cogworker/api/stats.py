"""Fleet-wide counters: processed, failed, enqueued, set sizes, throughput, Redis INFO."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, TypedDict

from cogworker.api._source import Source, resolve_broker, text
from cogworker.redis.errors import translate_errors

HOUR = 3600


class ThroughputPoint(TypedDict):
    """Jobs finished in one UTC hour (``time`` is the hour's start, ISO 8601)."""

    time: str
    processed: int
    failed: int


def _int(value: bytes | str | None) -> int:
    if value is None:
        return 0
    try:
        return int(text(value))
    except ValueError:
        return 0


def _flatten(info: dict[str, Any]) -> dict[str, Any]:
    """INFO as one flat mapping: nested sections (``db0``) become ``k=v,k=v`` strings."""
    flat: dict[str, Any] = {}
    for name, value in info.items():
        if isinstance(value, dict):
            flat[name] = ",".join(f"{k}={v}" for k, v in value.items())
        else:
            flat[name] = value
    return flat


class Stats:
    """Counters read fresh from Redis on every access.

    ::

        stats = Stats(app)
        print(stats.processed, stats.failed, stats.enqueued, stats.dead_size)
    """

    def __init__(self, source: Source) -> None:
        self._broker = resolve_broker(source)

    @property
    def processed(self) -> int:
        """Jobs that finished successfully, ever."""
        with translate_errors():
            return _int(self._broker.client.get(self._broker.keys.stats_processed))

    @property
    def failed(self) -> int:
        """Failed attempts (including ones that will retry), burials and discards, ever."""
        with translate_errors():
            return _int(self._broker.client.get(self._broker.keys.stats_failed))

    @property
    def enqueued(self) -> int:
        """Jobs waiting on every registered queue (sum of their lengths)."""
        keys = self._broker.keys
        client = self._broker.client
        with translate_errors():
            names = sorted(text(name) for name in client.smembers(keys.queues))
            if not names:
                return 0
            pipe = client.pipeline(transaction=False)
            for name in names:
                pipe.llen(keys.queue(name))
            return sum(int(size) for size in pipe.execute())

    def _zcard(self, key: str) -> int:
        with translate_errors():
            return int(self._broker.client.zcard(key))

    @property
    def retry_size(self) -> int:
        return self._zcard(self._broker.keys.retry)

    @property
    def scheduled_size(self) -> int:
        return self._zcard(self._broker.keys.schedule)

    @property
    def dead_size(self) -> int:
        return self._zcard(self._broker.keys.dead)

    def redis_info(self) -> dict[str, Any]:
        """The whole INFO reply as one flat mapping (``redis_version``, ``used_memory``...)."""
        with translate_errors():
            return _flatten(self._broker.client.info())

    def throughput(self, hours: int = 24, now: float | None = None) -> list[ThroughputPoint]:
        """One point per hour for the last ``hours`` hours (the current one last).

        Hours nobody recorded count as zero; hourly counters expire after 25 hours, so
        asking for more than 24 hours shows zeros for the older ones.
        """
        if hours < 1:
            raise ValueError(f"hours must be at least 1, not {hours}")
        current = int((time.time() if now is None else now) // HOUR)
        slots = range(current - hours + 1, current + 1)
        with translate_errors():
            pipe = self._broker.client.pipeline(transaction=False)
            for hour in slots:
                pipe.hmget(self._broker.keys.throughput(hour), ["processed", "failed"])
            replies = pipe.execute()
        return [
            ThroughputPoint(
                time=datetime.fromtimestamp(hour * HOUR, tz=timezone.utc).isoformat(),
                processed=_int(processed),
                failed=_int(failed),
            )
            for hour, (processed, failed) in zip(slots, replies, strict=True)
        ]

    def to_dict(self) -> dict[str, int]:
        """Every counter, for ``cogworker stats --json``."""
        return {
            "processed": self.processed,
            "failed": self.failed,
            "enqueued": self.enqueued,
            "scheduled": self.scheduled_size,
            "retry": self.retry_size,
            "dead": self.dead_size,
        }
