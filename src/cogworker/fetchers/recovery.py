"""What both built-in strategies share: the relock they requeue with, and recovery.

A requeue (a job handed back, a shutdown, an orphan recovery) re-takes the one lock the
``cogworker_requeue_lock`` hook names for the job, in the broker's atomic step:
:func:`hook_relock` builds that :data:`~cogworker.core.broker.Relock` from the hooks.
:func:`recovery_pass` is the orphan check's pass over ``broker.held`` (the held jobs of
dead processes, then the repeat orphans, then the handed-over failures), each step isolated
into ``report.failures``.
"""

from __future__ import annotations

import logging
import time

from cogworker.core.broker import (
    Broker,
    LockClaim,
    RecoveryOptions,
    RecoveryReport,
    Relock,
    StepFailure,
)
from cogworker.core.errors import BrokerUnavailableError, PayloadError
from cogworker.core.payload import decode
from cogworker.core.plugin_host import PluginHost

logger = logging.getLogger(__name__)

RECOVER_SITE = "orphan recovery"
REPEAT_ORPHANS_SITE = "repeat orphans"
UNSETTLED_SITE = "unsettled failures"


def hook_relock(app: PluginHost) -> Relock:
    """The lock to re-take with a requeued raw, as the active plugins name it.

    A raw that is not a job names no lock; a hook that raises is logged and the job is
    requeued without a lock (a requeue is never refused)."""

    def relock(raw: str) -> LockClaim | None:
        try:
            job = decode(raw)
        except PayloadError:
            return None
        try:
            return app.hooks.requeue_lock(app, job)
        except Exception:
            logger.exception("cogworker_requeue_lock failed for jid=%s; requeueing it without "
                             "re-taking a lock", job.get("jid"))
            return None

    return relock


def recovery_pass(broker: Broker, own_identity: str, options: RecoveryOptions,
                  relock: Relock | None) -> RecoveryReport:
    """``broker.held``'s recovery, repeat-orphan burial and unsettled filing, each isolated:
    one that fails is in ``report.failures`` and never skips the others."""
    try:
        report = broker.held.recover_orphans(own_identity, options, relock)
    except Exception as exc:  # the broker promises not to raise; a bug must not stop the rest
        report = RecoveryReport(connection_lost=isinstance(exc, BrokerUnavailableError))
        report.failures.append(StepFailure(RECOVER_SITE, exc))
    try:
        report.buried.extend(broker.held.bury_repeat_orphans(time.time(),
                                                             options.max_orphanings))
    except Exception as exc:
        report.connection_lost |= isinstance(exc, BrokerUnavailableError)
        report.failures.append(StepFailure(REPEAT_ORPHANS_SITE, exc))
    try:
        filed = broker.held.file_unsettled()
    except Exception as exc:
        report.connection_lost |= isinstance(exc, BrokerUnavailableError)
        report.failures.append(StepFailure(UNSETTLED_SITE, exc))
    else:
        report.filed_dead.extend(raw for set_name, raw in filed if set_name == "dead")
    return report


def process_recovery(broker: Broker, identity: str, options: RecoveryOptions,
                     relock: Relock | None) -> RecoveryReport:
    """``broker.held.recover_process`` for one process whose death is vouched for, never
    raising."""
    try:
        return broker.held.recover_process(identity, options, relock)
    except Exception as exc:
        report = RecoveryReport(connection_lost=isinstance(exc, BrokerUnavailableError))
        report.failures.append(StepFailure(f"{RECOVER_SITE} of {identity}", exc))
        return report
