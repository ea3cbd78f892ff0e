"""The ``unique`` built-in plugin: one copy of a job at a time, by owner-checked locks.

Modes (the job's ``unique=`` option, see :mod:`cogworker.plugins.unique_spec` for keys):

* ``until_executed`` — locked at push; kept (and extended) across retries; released when
  the job succeeds or fails for good (dead, killed, discarded, orphaned too often);
* ``until_executing`` — locked at push, released as the job starts;
* ``while_executing`` — nothing at push; a *run* lock while it runs, so two copies never
  run at once (the later one is put back a few seconds ahead). The run lock lives
  ``orphan_threshold + 121`` s and every heartbeat renews it, so a crashed worker's lock
  goes by itself;
* ``unique_for=SECONDS`` alone — a window lock taken at push that only expires. With
  ``until_executed``/``until_executing`` it caps that lock's TTL instead (never extended).

Every extend and release is owner-checked (one Lua step), so an older run can never touch a
lock that passed to a newer job. Releases that fail because Redis is away are owed and
retried on every heartbeat and at shutdown. Implemented only through the unique-lock hooks:
a plugin marked ``tryfirst`` replaces any decision, and ``--plugin no:unique`` turns it off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.job import UNIQUE_MODES
from cogworker.core.job_options import JobOption
from cogworker.core.markers import hookimpl
from cogworker.plugins.unique_spec import (
    UNTIL_EXECUTED,
    UNTIL_EXECUTING,
    UniqueSpec,
    spec_for,
)
from cogworker.plugins.unique_state import configure_state, lock_ttl, release, state_of

if TYPE_CHECKING:
    from cogworker.core.hookspecs import WorkerHandle
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

logger = logging.getLogger("cogworker.unique")

RUN_LOCK_MARGIN = 121.0  # seconds beyond orphan_threshold, as cron running locks


def run_lock_ttl(app: PluginHost) -> float:
    """How long a ``while_executing`` run lock lives between two heartbeats' renewals."""
    return float(int(app.settings.orphan_threshold + RUN_LOCK_MARGIN))


def _spec_or_log(app: PluginHost, job: Mapping[str, Any], action: str) -> UniqueSpec | None:
    """The job's lock rules for a worker-side step; a bad job is logged, not raised."""
    try:
        return spec_for(app, job)
    except Exception as exc:
        logger.error("cannot %s the unique lock of jid=%s: %s; the lock (if any) expires by "
                     "its TTL", action, job.get("jid"), exc)
        return None


# -- push ----------------------------------------------------------------------------------

UNIQUE_FIELDS = ("unique", "unique_for")
"""What a unique job's payload carries (:func:`spec_for` reads nothing else to tell): the
lock hooks skip every other job."""


@hookimpl
def cogworker_configure(app: PluginHost) -> None:
    configure_state(app)


def _is_mode(value: object) -> bool:
    return value is None or value is False or value in UNIQUE_MODES


def _is_window(value: object) -> bool:
    return (value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                              and value > 0))


@hookimpl
def cogworker_job_options() -> list[JobOption]:
    return [
        JobOption("unique", f"one of {', '.join(UNIQUE_MODES)}, or None", _is_mode),
        JobOption("unique_for", "a number of seconds > 0", _is_window),
        JobOption("unique_args", "a callable taking the argument list and returning the "
                  "arguments that count", callable),
    ]


@hookimpl(for_jobs_with=UNIQUE_FIELDS)
def cogworker_acquire_unique_lock(app: PluginHost, job: Payload) -> bool | None:
    spec = spec_for(app, job)
    if spec is None or spec.push_lock is None:
        return None
    return app.broker.locks.acquire(spec.push_lock, str(job["jid"]), spec.ttl)


# -- run -----------------------------------------------------------------------------------


@hookimpl(for_jobs_with=UNIQUE_FIELDS)
def cogworker_unique_job_starting(app: PluginHost, job: Payload) -> bool | None:
    spec = spec_for(app, job)
    if spec is None:
        return None
    jid = str(job.get("jid"))
    if spec.mode == UNTIL_EXECUTING and spec.push_lock is not None:
        release(app, spec.push_lock, jid, "started")
        return None
    if spec.run_lock is None:
        return None
    locks, ttl = app.broker.locks, run_lock_ttl(app)
    # Already ours means the same job came back after a crash: it may run.
    return locks.acquire(spec.run_lock, jid, ttl) or locks.extend(spec.run_lock, jid, ttl)


@hookimpl(for_jobs_with=UNIQUE_FIELDS)
def cogworker_extend_unique_lock(app: PluginHost, job: Payload, wait: float) -> None:
    spec = _spec_or_log(app, job, "extend")
    if spec is None:
        return
    jid = str(job.get("jid"))
    if spec.run_lock is not None:
        release(app, spec.run_lock, jid, "retry")  # not running while it waits
        return
    if spec.mode != UNTIL_EXECUTED or spec.capped or spec.push_lock is None:
        return
    try:
        if not app.broker.locks.extend(spec.push_lock, jid, wait + lock_ttl(app)):
            logger.debug("unique lock %s is no longer held by jid=%s; not extended",
                         spec.push_lock, jid)
    except BrokerUnavailableError as exc:
        logger.warning("could not extend unique lock %s of jid=%s over its retry wait: Redis "
                       "unavailable (%s); it keeps its current TTL", spec.push_lock, jid, exc)


@hookimpl(for_jobs_with=UNIQUE_FIELDS)
def cogworker_release_unique_lock(app: PluginHost, job: Payload, reason: str) -> None:
    spec = _spec_or_log(app, job, "release")
    if spec is None:
        return
    jid = str(job.get("jid"))
    if reason == "push-failed":
        if spec.push_lock is not None:
            release(app, spec.push_lock, jid, reason)
        return
    if reason == "started":
        if spec.mode == UNTIL_EXECUTING and spec.push_lock is not None:
            release(app, spec.push_lock, jid, reason)
        return
    if spec.run_lock is not None:
        release(app, spec.run_lock, jid, reason)
    if spec.released_when_done and spec.push_lock is not None:
        release(app, spec.push_lock, jid, reason)


# -- lifecycle -----------------------------------------------------------------------------


def _renew_run_locks(worker: WorkerHandle) -> None:
    """Keep the run locks of running ``while_executing`` jobs (retake a lost one)."""
    app = worker.app
    ttl = run_lock_ttl(app)
    for job in worker.performing_jobs():
        spec = _spec_or_log(app, job, "renew")
        if spec is None or spec.run_lock is None:
            continue
        jid = str(job.get("jid"))
        locks = app.broker.locks
        if locks.extend(spec.run_lock, jid, ttl) or locks.acquire(spec.run_lock, jid, ttl):
            continue
        logger.warning("jid=%s runs while run lock %s is held by jid=%s (it expired during an "
                       "outage): two copies may be running", jid, spec.run_lock,
                       locks.owner(spec.run_lock))


def _start_orphan_report(app: PluginHost) -> None:
    from cogworker.plugins.unique_admin import report_orphaned_locks

    clock = state_of(app).orphan_clock

    def run() -> None:
        try:
            report_orphaned_locks(app)
        except Exception as exc:
            logger.warning("orphaned unique lock report failed: %s: %s", type(exc).__name__,
                           exc)
        finally:
            clock.running.clear()

    threading.Thread(target=run, name="cogworker-unique-orphans", daemon=True).start()


@hookimpl
def cogworker_heartbeat(worker: WorkerHandle) -> None:
    app = worker.app
    state = state_of(app)
    state.deferred.retry(app.broker.locks)
    if state.orphan_clock.take_turn(time.monotonic()):
        _start_orphan_report(app)
    _renew_run_locks(worker)


@hookimpl
def cogworker_shutdown(worker: WorkerHandle) -> None:
    app = worker.app
    for job in worker.performing_jobs():  # abandoned: requeued, or lost with the process
        spec = _spec_or_log(app, job, "release")
        if spec is not None and spec.run_lock is not None:
            release(app, spec.run_lock, str(job.get("jid")), "shutdown")
    deferred = state_of(app).deferred
    deferred.retry(app.broker.locks)
    owed = deferred.owed()
    if owed:
        shown = ", ".join(f"{key} (jid={owner})" for key, owner in owed[:20])
        logger.warning("exiting with %d unique lock release(s) still owed (Redis unavailable): "
                       "%s; they expire by their TTL, or clear them with `cogworker locks "
                       "clear`", len(owed), shown)
