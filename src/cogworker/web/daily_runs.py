"""Runs per UTC day for the Overview's chart: from the run history's daily counts when the
history plugin is on (here, or in the workers that wrote some), else from the hourly
throughput counters (kept 25 hours, so at most the last two days show)."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from cogworker.api.stats import Stats
from cogworker.core.errors import BrokerUnavailableError, CogworkerError
from cogworker.web.plugin_state import plugin_off

if TYPE_CHECKING:
    from cogworker.app import App

PERIODS = (7, 30, 90)
Source = Literal["history", "counters"]


@dataclass(frozen=True)
class DayCount:
    day: str
    """``YYYY-MM-DD`` (UTC)."""
    success: int
    failed: int


@dataclass(frozen=True)
class DailyRuns:
    source: Source
    days: list[DayCount]
    """Every day of the period, oldest first (zeros where nothing was counted)."""

    def to_json(self) -> dict[str, object]:
        return {"source": self.source,
                "labels": [f"{day.day}T00:00:00+00:00" for day in self.days],
                "success": [day.success for day in self.days],
                "failed": [day.failed for day in self.days]}


def _day_names(days: int, now: float) -> list[str]:
    today = dt.datetime.fromtimestamp(now, dt.timezone.utc).date()
    return [(today - dt.timedelta(days=back)).isoformat() for back in range(days - 1, -1, -1)]


def daily_runs(app: App, days: int, now: float | None = None) -> DailyRuns:
    """The last ``days`` UTC days (today included)."""
    moment = time.time() if now is None else now
    names = _day_names(days, moment)
    try:
        counts = app.history.daily_counts(days, now=moment)
    except BrokerUnavailableError:
        raise
    except CogworkerError:  # a broker that keeps no history at all
        counts = None
    # counts there: workers elsewhere record them, even with the plugin off here
    if counts is not None and (counts or plugin_off(app, "history") is None):
        return DailyRuns("history", [
            DayCount(name, counts[name].success if name in counts else 0,
                     counts[name].failed if name in counts else 0) for name in names])
    totals: dict[str, list[int]] = {}
    for point in Stats(app).throughput(24, now=moment):
        day = point["time"][:10]
        bucket = totals.setdefault(day, [0, 0])
        bucket[0] += point["processed"]
        bucket[1] += point["failed"]
    return DailyRuns("counters", [
        DayCount(name, *totals.get(name, [0, 0])) for name in names])
