"""Periodic (cron) jobs: registration, cron parsing, and operating the entries.

Register with ``app.periodic(cron, job, ...)`` (or the config file, see
:mod:`cogworker.periodic.registration`); every worker process ticks
(:mod:`cogworker.worker.ticker`) and one atomic claim per slot decides which one fires it.
"""

from __future__ import annotations

from cogworker.periodic.admin import (
    EntryStatus,
    disable,
    enable,
    list_entries,
    resolve_entry,
    run_now,
)
from cogworker.periodic.cron import CronExpressionError, next_fire, parse_cron, previous_fire
from cogworker.periodic.registration import all_entries, make_entry, register

__all__ = [
    "CronExpressionError",
    "EntryStatus",
    "all_entries",
    "disable",
    "enable",
    "list_entries",
    "make_entry",
    "next_fire",
    "parse_cron",
    "previous_fire",
    "register",
    "resolve_entry",
    "run_now",
]
