"""What the observability plugins would have recorded for the seeded fleet: run history,
per-class metrics, failure trails and live statuses, written through the broker's facets
(the stores the plugins write), some of it hostile text the pages must escape."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from cogworker.app import App
from cogworker.core.broker import ATTEMPTS, HISTORY, METRICS, STATUS, Attempt, StatusRecord
from cogworker.core.broker.history import HistoryRecord, HistoryRetention
from cogworker.core.broker.metrics import (
    BUCKET_COUNT,
    MetricsBatch,
    SeriesKey,
    Timings,
    bucket_of,
)
from cogworker.plugins.metrics.options import DEFAULT_HOUR_RETENTION, DEFAULT_MINUTE_RETENTION
from web.seed import CLASSES, HOSTILE, IMG, SCRIPT, Seeded

RETENTION = HistoryRetention(max_age=40 * 86400, max_entries=1_000_000, daily_ttl=400 * 86400)
HOSTILE_RUN_JID = "hostile0run0jid000000000"


@dataclass
class Observed:
    """Jids the tests look for again."""

    history_jids: list[str] = field(default_factory=list)
    trail_jid: str = ""
    status_jid: str = ""


def history_records(now: float, count: int, spacing: float = 1000.0) -> list[HistoryRecord]:
    """``count`` runs, one each ``spacing`` seconds back from ``now``: every fifth failed,
    durations 5 ms to 4 s, two runs per jid."""
    records = []
    for index in range(count):
        failed = index % 5 == 4
        finished = int((now - index * spacing) * 1000)
        duration = (index * 37 % 4000 + 5) * 1000
        records.append(HistoryRecord(
            run_id=f"run{index:08d}", jid=f"jid{index // 2:021d}",
            job_class=CLASSES[index % len(CLASSES)],
            queue=("default", "mail", "reports")[index % 3],
            status="failed" if failed else "success", started_ms=finished - duration // 1000,
            finished_ms=finished, duration_us=duration,
            args=json.dumps([index, {"plan": "pro"}]),
            error_class=("TimeoutError" if index % 10 == 4 else "ValueError") if failed else None,
            error_message=(f"gateway did not answer in {index % 30}s" if index % 10 == 4
                           else f"customer {index} has no card") if failed else None,
            backtrace=("Traceback (most recent call last):", '  File "jobs.py", line 4',
                       "TimeoutError") if failed else ()))
    return records


def _hostile_runs(now: float) -> list[HistoryRecord]:
    finished = int(now * 1000) - 500
    return [HistoryRecord(
        run_id=f"hostile-{n}", jid=HOSTILE_RUN_JID, job_class=text, queue="mail",
        status="failed", started_ms=finished - 40, finished_ms=finished + n,
        duration_us=40_000, args=json.dumps([SCRIPT, IMG]), error_class=SCRIPT,
        error_message=IMG, backtrace=(SCRIPT, IMG)) for n, text in enumerate(HOSTILE)]


def _timings(runs: int, failed: int, spread_ms: float) -> Timings:
    buckets = [0] * BUCKET_COUNT
    total = 0.0
    for n in range(runs):
        ms = spread_ms * (0.2 + (n % 10) / 10) * (8 if n % 50 == 49 else 1)
        buckets[bucket_of(ms)] += 1
        total += ms
    return Timings(runs - failed, failed, total, tuple(buckets))


def seed_metrics(app: App, now: float) -> None:
    store = app.broker.extension(METRICS)
    assert store is not None
    classes = (*CLASSES, SCRIPT)
    for minute in range(90):
        series = {SeriesKey(name, "mail" if name == SCRIPT else "default"):
                  _timings(20 + (minute * 7 + n * 13) % 25, (minute + n) % 4 if n % 2 else 0,
                           15.0 * (n + 1) * (1.3 if minute % 17 == 0 else 1))
                  for n, name in enumerate(classes)}
        store.record(MetricsBatch(series), now - 60 * minute, DEFAULT_MINUTE_RETENTION,
                     DEFAULT_HOUR_RETENTION)


def seed_observed(app: App, seeded: Seeded, now: float, runs: int = 600) -> Observed:
    """History (``runs`` records plus hostile ones), metrics for 90 minutes, one failure
    trail and one live status (of the retrying job shown first), and hostile trail text."""
    out = Observed()
    history = app.broker.extension(HISTORY)
    assert history is not None
    records = history_records(now, runs) + _hostile_runs(now)
    history.append(records, RETENTION)
    out.history_jids = [record.jid for record in records[:10]]
    seed_metrics(app, now)
    trails = app.broker.extension(ATTEMPTS)
    assert trails is not None
    out.trail_jid = seeded.retry[-1]  # the first row of the retrying jobs, newest first
    for number in range(1, 4):
        trails.append(out.trail_jid, Attempt(number, now - 600 * (4 - number), "retrying",
                                             "TimeoutError" if number < 3 else SCRIPT,
                                             f"gateway did not answer ({number})"
                                             if number < 3 else IMG))
    statuses = app.broker.extension(STATUS)
    assert statuses is not None
    out.status_jid = seeded.retry[-1]
    statuses.write([StatusRecord(out.status_jid, "retrying", now - 30, now + 3600,
                                 class_name=CLASSES[0], queue="default", pct=40.0,
                                 message=SCRIPT, fields={"step": IMG})])
    return out
