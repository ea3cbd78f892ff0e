"""Look inside a running cogworker fleet: counters, queues, sets, processes, running jobs.

Every class is built from a broker (any :class:`~cogworker.core.broker.Broker`) or an
:class:`~cogworker.app.App` and reads the broker afresh on each call::

    from cogworker.api import DeadSet, ProcessSet, Queue, Stats

    print(Stats(app).to_dict())
    for entry in DeadSet(app):
        if entry.klass == "Flaky":
            entry.retry_now()

See ``docs/reference/api.md``.
"""

from __future__ import annotations

from cogworker.api._source import JobRecord
from cogworker.api.history import History
from cogworker.api.metrics import ClassSummary, Metrics, MetricsPoint
from cogworker.api.processes import Process, ProcessSet, Work, WorkSet
from cogworker.api.queues import Queue, QueueSummary
from cogworker.api.sorted_sets import DeadSet, RetrySet, ScheduledSet, SortedEntry, SortedSet
from cogworker.api.stats import Stats, ThroughputPoint
from cogworker.api.status import JobStatus, job_attempts, job_status, job_statuses

Workers = WorkSet

__all__ = [
    "ClassSummary",
    "DeadSet",
    "History",
    "JobRecord",
    "JobStatus",
    "Metrics",
    "MetricsPoint",
    "Process",
    "ProcessSet",
    "Queue",
    "QueueSummary",
    "RetrySet",
    "ScheduledSet",
    "SortedEntry",
    "SortedSet",
    "Stats",
    "ThroughputPoint",
    "Work",
    "WorkSet",
    "Workers",
    "job_attempts",
    "job_status",
    "job_statuses",
]
