"""The broker contract: everything cogworker asks of a message store. No Redis here.

One composite :class:`Broker` made of small facets, one module each:

=====================  ====================  ==============================================
attribute              Protocol              what it holds
=====================  ====================  ==============================================
``broker.queues``      :class:`QueueStore`   queues and pushes; pops for strategies that
                                             hold nothing; pause; wake-ups
``broker.held``        :class:`HeldJobStore` jobs a process holds until settled; orphan
                                             recovery; handed-over failures
``broker.sets``        :class:`JobSets`      schedule, retry, dead; graduation
``broker.processes``   :class:`ProcessRegistry`  presence, running work, remote control
``broker.locks``       :class:`LockStore`    owner-checked locks; bounded scans
``broker.periodic``    :class:`PeriodicStore`  cron schedule, disabled entries, slot claims
``broker.stats``       :class:`StatsStore`   processed/failed totals and hourly counts
=====================  ====================  ==============================================

plus :class:`Fetcher` (a fetch strategy: the policy over the held and queue facets),
optional facets through :meth:`Broker.extension`, and :class:`BrokerSchemes` (how a broker
plugin claims URL schemes). The Redis broker is :mod:`cogworker.redis`; an in-memory one
lives in :mod:`cogworker.testing`.

Vocabulary every facet shares:

* a **raw** is the exact stored text of a job. Removal always matches the raw that was
  read; a raw is never re-serialized to find it again. Bytes that are not UTF-8 travel
  decoded with ``surrogateescape``, so they still match byte for byte.
* **atomic** means one indivisible step of the store (Redis: one Lua script or MULTI):
  other processes see all of it or none of it. Steps that move a job **write first and
  remove second**, so a failure in between can duplicate, never lose.
* every read of jobs or locks is **bounded**: a page, a window of a search, a step of a
  scan, each returning where to go on from. Only configuration-sized things (queue names,
  live processes, cron entries, one process's held jobs) are read whole.
* errors: :class:`~cogworker.core.errors.BrokerUnavailableError` (the store cannot be
  reached: retry later) and :class:`~cogworker.core.errors.BrokerError` (anything else),
  with the driver's exception as ``__cause__``, translated inside the broker. ``ValueError``
  for arguments no store could accept (an empty name, a negative count).
"""

from __future__ import annotations

from cogworker.core.broker.attempts import (
    ATTEMPT_OUTCOMES,
    ATTEMPTS,
    Attempt,
    AttemptOutcome,
    AttemptStore,
)
from cogworker.core.broker.batches import (
    BATCHES,
    BatchCounts,
    BatchOutcome,
    BatchRecord,
    BatchSpec,
    BatchStore,
    BatchUpdate,
    CallbackTemplate,
    SettleItem,
)
from cogworker.core.broker.cancellation import (
    CANCELLATIONS,
    WAITING_PLACES,
    CancellationStore,
    WaitingEntry,
    WaitingPlace,
)
from cogworker.core.broker.composite import LOCATE_WINDOW, Broker, Extension
from cogworker.core.broker.factory import (
    NO_URL,
    BrokerSchemes,
    scheme_owners,
    unknown_scheme_error,
    url_scheme,
)
from cogworker.core.broker.fetcher import Fetcher
from cogworker.core.broker.held import (
    LIVE_QUEUE_WINDOW,
    ORPHAN_COUNTER_TTL,
    ClaimBatch,
    HeldJobStore,
    RecoveryOptions,
    RecoveryReport,
    StepFailure,
)
from cogworker.core.broker.history import (
    HISTORY,
    RUN_STATUSES,
    SORT_KEYS,
    DailyCount,
    HistoryPage,
    HistoryQuery,
    HistoryRecord,
    HistoryRetention,
    HistoryStore,
)
from cogworker.core.broker.limits import (
    LIMITER_KINDS,
    LIMITS,
    Admission,
    Holder,
    LimiterKind,
    LimiterSpec,
    LimiterUsage,
    LimitStore,
)
from cogworker.core.broker.locks import LockClaim, LockPage, LockRecord, LockStore, Relock
from cogworker.core.broker.metrics import (
    METRICS,
    MetricsBatch,
    MetricsStore,
    RunningTotals,
    SeriesKey,
    Timings,
    WindowBucket,
)
from cogworker.core.broker.periodic import PeriodicStore, running_lock_name
from cogworker.core.broker.processes import (
    SIGNALS,
    ProcessRecord,
    ProcessRegistry,
    RunningJob,
    WorkRecord,
)
from cogworker.core.broker.queues import QueueRecord, QueueStore
from cogworker.core.broker.records import (
    SORTED_SET_NAMES,
    GraduatedSetName,
    LocatePage,
    SearchHit,
    SearchPage,
    Sighting,
    SortedSetName,
    UnitOfWork,
    Whereabouts,
)
from cogworker.core.broker.results import (
    RESULTS,
    WORKFLOW_STATES,
    FinishedStep,
    FinishOutcome,
    NextStep,
    ResultStore,
    WorkflowRecord,
    WorkflowState,
)
from cogworker.core.broker.sets import DEFER_DELAY, GraduationReport, JobSets, SetEntry
from cogworker.core.broker.stats import THROUGHPUT_HOURS_KEPT, HourlyCount, StatsStore, StatsTotals
from cogworker.core.broker.status import (
    JOB_STATES,
    STATUS,
    JobState,
    StatusRecord,
    StatusStore,
)
from cogworker.core.broker.subscription import Subscription
from cogworker.core.broker.wakeups import WakeupListener

SignalSubscription = Subscription
"""The subscription :meth:`ProcessRegistry.subscribe_signals` yields (its older name)."""

__all__ = [
    "ATTEMPTS",
    "ATTEMPT_OUTCOMES",
    "BATCHES",
    "CANCELLATIONS",
    "DEFER_DELAY",
    "HISTORY",
    "JOB_STATES",
    "LIMITER_KINDS",
    "LIMITS",
    "LIVE_QUEUE_WINDOW",
    "LOCATE_WINDOW",
    "METRICS",
    "NO_URL",
    "ORPHAN_COUNTER_TTL",
    "RESULTS",
    "RUN_STATUSES",
    "SIGNALS",
    "SORTED_SET_NAMES",
    "SORT_KEYS",
    "STATUS",
    "THROUGHPUT_HOURS_KEPT",
    "WAITING_PLACES",
    "WORKFLOW_STATES",
    "Admission",
    "Attempt",
    "AttemptOutcome",
    "AttemptStore",
    "BatchCounts",
    "BatchOutcome",
    "BatchRecord",
    "BatchSpec",
    "BatchStore",
    "BatchUpdate",
    "Broker",
    "BrokerSchemes",
    "CallbackTemplate",
    "CancellationStore",
    "ClaimBatch",
    "DailyCount",
    "Extension",
    "Fetcher",
    "FinishOutcome",
    "FinishedStep",
    "GraduatedSetName",
    "GraduationReport",
    "HeldJobStore",
    "HistoryPage",
    "HistoryQuery",
    "HistoryRecord",
    "HistoryRetention",
    "HistoryStore",
    "Holder",
    "HourlyCount",
    "JobSets",
    "JobState",
    "LimitStore",
    "LimiterKind",
    "LimiterSpec",
    "LimiterUsage",
    "LocatePage",
    "LockClaim",
    "LockPage",
    "LockRecord",
    "LockStore",
    "MetricsBatch",
    "MetricsStore",
    "NextStep",
    "PeriodicStore",
    "ProcessRecord",
    "ProcessRegistry",
    "QueueRecord",
    "QueueStore",
    "RecoveryOptions",
    "RecoveryReport",
    "Relock",
    "ResultStore",
    "RunningJob",
    "RunningTotals",
    "SearchHit",
    "SearchPage",
    "SeriesKey",
    "SetEntry",
    "SettleItem",
    "Sighting",
    "SignalSubscription",
    "SortedSetName",
    "StatsStore",
    "StatsTotals",
    "StatusRecord",
    "StatusStore",
    "StepFailure",
    "Subscription",
    "Timings",
    "UnitOfWork",
    "WaitingEntry",
    "WaitingPlace",
    "WakeupListener",
    "Whereabouts",
    "WindowBucket",
    "WorkRecord",
    "WorkflowRecord",
    "WorkflowState",
    "running_lock_name",
    "scheme_owners",
    "unknown_scheme_error",
    "url_scheme",
]
