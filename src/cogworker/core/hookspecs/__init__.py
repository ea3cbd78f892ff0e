"""Every cogworker hook specification, re-exported from one module per phase.

Plugins implement these with ``@cogworker.hookimpl``. The engine never calls ``pm.hook``
itself: :class:`cogworker.core.hooks.Hooks` is the typed facade and the only caller.

Failure policy, stated per hook: *decision* hooks (fetcher, locks, claims) propagate
exceptions to the engine, which decides; *notification* hooks (lifecycle, job events) are
isolated: an exception is logged with the plugin's name and the other plugins still run.

This package is what the plugin manager reads (``pm.add_hookspecs(hookspecs)``); the
phases live in its modules, in the order of :data:`SECTION_MODULES` (the hook reference's
order), and :class:`WorkerHandle` in ``worker_handle``.

Hooks evolve by adding arguments only: an implementation may accept any subset of a spec's
arguments, so existing plugins keep working.
"""

from __future__ import annotations

from cogworker.core.hookspecs.broker import cogworker_broker_schemes, cogworker_make_broker
from cogworker.core.hookspecs.fetch import cogworker_make_fetcher, cogworker_requeue_lock
from cogworker.core.hookspecs.job_events import (
    cogworker_before_ack,
    cogworker_job_died,
    cogworker_job_discarded,
    cogworker_job_expired,
    cogworker_job_progress,
    cogworker_job_retried,
    cogworker_jobs_deleted,
    cogworker_orphans_recovered,
)
from cogworker.core.hookspecs.lifecycle import (
    cogworker_heartbeat,
    cogworker_shutdown,
    cogworker_startup,
)
from cogworker.core.hookspecs.middleware import (
    cogworker_client_middleware,
    cogworker_server_middleware,
)
from cogworker.core.hookspecs.periodic import (
    cogworker_claim_periodic_slot,
    cogworker_periodic_fired,
    cogworker_release_periodic_lock,
    cogworker_retake_periodic_lock,
    cogworker_rollback_periodic_claim,
    cogworker_touch_periodic_lock,
)
from cogworker.core.hookspecs.setup import (
    cogworker_addhooks,
    cogworker_configure,
    cogworker_job_options,
)
from cogworker.core.hookspecs.unique import (
    cogworker_acquire_unique_lock,
    cogworker_extend_unique_lock,
    cogworker_release_unique_lock,
    cogworker_unique_job_starting,
)
from cogworker.core.hookspecs.web import cogworker_web_authorize, cogworker_web_tabs
from cogworker.core.hookspecs.worker_handle import WorkerHandle

SECTION_MODULES: tuple[str, ...] = (
    "setup",
    "broker",
    "fetch",
    "middleware",
    "unique",
    "periodic",
    "lifecycle",
    "job_events",
    "web",
)
"""The phase modules, in the order the hook reference lists them."""

ALL_HOOKS: tuple[str, ...] = tuple(sorted(n for n in dir() if n.startswith("cogworker_")))

__all__ = [
    "ALL_HOOKS",
    "SECTION_MODULES",
    "WorkerHandle",
    "cogworker_acquire_unique_lock",
    "cogworker_addhooks",
    "cogworker_before_ack",
    "cogworker_broker_schemes",
    "cogworker_claim_periodic_slot",
    "cogworker_client_middleware",
    "cogworker_configure",
    "cogworker_extend_unique_lock",
    "cogworker_heartbeat",
    "cogworker_job_died",
    "cogworker_job_discarded",
    "cogworker_job_expired",
    "cogworker_job_options",
    "cogworker_job_progress",
    "cogworker_job_retried",
    "cogworker_jobs_deleted",
    "cogworker_make_broker",
    "cogworker_make_fetcher",
    "cogworker_orphans_recovered",
    "cogworker_periodic_fired",
    "cogworker_release_periodic_lock",
    "cogworker_release_unique_lock",
    "cogworker_requeue_lock",
    "cogworker_retake_periodic_lock",
    "cogworker_rollback_periodic_claim",
    "cogworker_server_middleware",
    "cogworker_shutdown",
    "cogworker_startup",
    "cogworker_touch_periodic_lock",
    "cogworker_unique_job_starting",
    "cogworker_web_authorize",
    "cogworker_web_tabs",
]
