"""Fleet-wide counters: processed, failed, enqueued, set sizes, throughput, server info."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, TypedDict

from cogworker.api._source import Source, resolve_broker

HOUR = 3600


class ThroughputPoint(TypedDict):
    """Jobs finished in one UTC hour (``time`` is the hour's start, ISO 8601)."""

    time: str
    processed: int
    failed: int


class Stats:
    """Counters read afresh from the broker on every access.

    ::

        stats = Stats(app)
        print(stats.processed, stats.failed, stats.enqueued, stats.dead_size)
    """

    def __init__(self, source: Source) -> None:
        self._broker = resolve_broker(source)

    @property
    def processed(self) -> int:
        """Jobs that finished successfully, ever."""
        return self._broker.stats.totals().processed

    @property
    def failed(self) -> int:
        """Failed attempts (including ones that will retry), burials and discards, ever."""
        return self._broker.stats.totals().failed

    @property
    def enqueued(self) -> int:
        """Jobs waiting on every registered queue (sum of their sizes)."""
        return sum(record.size for record in self._broker.queues.records())

    @property
    def retry_size(self) -> int:
        return self._broker.sets.size("retry")

    @property
    def scheduled_size(self) -> int:
        return self._broker.sets.size("schedule")

    @property
    def dead_size(self) -> int:
        return self._broker.sets.size("dead")

    def redis_info(self) -> dict[str, Any]:
        """What the server says about itself, as one flat mapping (Redis: the whole INFO
        reply, ``redis_version``, ``used_memory``...; see ``Broker.server_info``)."""
        return dict(self._broker.server_info())

    def throughput(self, hours: int = 24, now: float | None = None) -> list[ThroughputPoint]:
        """One point per hour for the last ``hours`` hours (the current one last).

        Hours nobody recorded count as zero; hourly counts are kept 25 hours, so asking for
        more than 24 hours shows zeros for the older ones.
        """
        if hours < 1:
            raise ValueError(f"hours must be at least 1, not {hours}")
        current = int((time.time() if now is None else now) // HOUR)
        counts = self._broker.stats.throughput(current - hours + 1, current)
        return [
            ThroughputPoint(
                time=datetime.fromtimestamp(count.hour * HOUR, tz=timezone.utc).isoformat(),
                processed=count.processed,
                failed=count.failed,
            )
            for count in counts
        ]

    def to_dict(self) -> dict[str, int]:
        """Every counter, for ``cogworker stats --json``."""
        totals = self._broker.stats.totals()
        return {
            "processed": totals.processed,
            "failed": totals.failed,
            "enqueued": self.enqueued,
            "scheduled": self.scheduled_size,
            "retry": self.retry_size,
            "dead": self.dead_size,
        }
