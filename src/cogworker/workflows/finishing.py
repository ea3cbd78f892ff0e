"""Writing one finished step (:meth:`~cogworker.core.broker.ResultStore.finish_step`) from
a worker: retried while the broker is unreachable, and a step that had finished before
(run again after a crash before its ack) said so in the log."""

from __future__ import annotations

import logging
import time

from cogworker.core.broker import FinishedStep, FinishOutcome, ResultStore
from cogworker.core.errors import BrokerUnavailableError

logger = logging.getLogger("cogworker.plugin.workflows")

WRITE_PAUSES = (0.1, 0.2, 0.4, 0.8, 1.6)
"""Pauses between attempts to store a step's result while the broker is unreachable
(about three seconds in all; then the error propagates and the step fails)."""


def write_finished(store: ResultStore, finished: FinishedStep) -> FinishOutcome:
    """Store ``finished`` (result, next push) once; see the module docstring."""
    outcome = _attempt(store, finished)
    if outcome == "already":
        logger.warning("workflow %s: step %d (jid=%s) had finished before this run; its "
                       "result and next step stand, nothing was pushed again",
                       finished.workflow_id, finished.step + 1, finished.jid)
    return outcome


def _attempt(store: ResultStore, finished: FinishedStep) -> FinishOutcome:
    for pause in WRITE_PAUSES:
        try:
            return store.finish_step(finished)
        except BrokerUnavailableError:
            time.sleep(pause)
    return store.finish_step(finished)
