"""The ``batches`` plugin's per-app state: its options, the store, the settle step with its
retries and its hand-up to parent batches, and the bids known to be cancelled."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cogworker.core.broker.batches import (
    BATCHES,
    CHILD_PREFIX,
    BatchOutcome,
    BatchUpdate,
    SettleItem,
)
from cogworker.core.errors import BrokerUnavailableError
from cogworker.plugins.batches.errors import BatchError, BatchSettleError
from cogworker.plugins.batches.options import PLUGIN_NAME, BatchesOptions

if TYPE_CHECKING:
    from cogworker.core.broker.batches import BatchStore
    from cogworker.core.plugin_host import PluginHost, PluginHostBase

logger = logging.getLogger("cogworker.plugin.batches")

SETTLE_SLEEPS = (0.05, 0.2, 0.5, 1.0, 2.0)
"""Pauses between attempts of a settle while the broker is unreachable (about 4 s)."""
MAX_DEPTH = 32
"""Parent levels a settle hands an outcome up through (a guard against a cycle)."""


class BatchesRuntime:
    """Thread-safe; one per app, in ``app.extras["batches"]``."""

    def __init__(self, app: PluginHost, options: BatchesOptions) -> None:
        self.app = app
        self.options = options
        self.cancelled: frozenset[str] = frozenset()
        self.seen_batch_job = False
        self.defer_success = False
        """True while a worker runs here: its acks call ``cogworker_before_ack``, so a
        success is settled there, in one round trip per ack batch."""
        self._owed: dict[str, SettleItem] = {}
        self._lock = threading.Lock()

    @property
    def store(self) -> BatchStore:
        store = self.app.broker.extension(BATCHES)
        if store is None:
            raise BatchError(f"the {self.app.broker.name} broker keeps no batches (no "
                             f"{BATCHES.name!r} facet); use the Redis or the memory broker")
        return store

    def settle(self, bid: str, member: str, outcome: BatchOutcome,
               callback_queue: str) -> BatchUpdate:
        """Record one outcome (retried while the broker is unreachable), then hand the
        batch's state up to its parents. Raises :class:`BatchSettleError` when the broker
        stayed away (the caller decides what that means for the job)."""
        update = self._settle_once(bid, member, outcome, callback_queue)
        if update.cancelled:
            self.note_cancelled(bid)
        self.hand_up(update)
        return update

    def hand_up(self, update: BatchUpdate) -> None:
        """A finished child batch is a member of its parent: record what it means there
        (idempotent, so it runs again after a crash and changes nothing twice)."""
        for _level in range(MAX_DEPTH):
            if update.parent is None or not update.parent_outcomes():
                return
            child, parent = update, update.parent
            queue = child.parent_callback_queue or self.options.callback_queue
            for outcome in child.parent_outcomes():
                update = self._settle_once(parent, CHILD_PREFIX + child.bid, outcome, queue)
        logger.error("batch %s: more than %d levels of parent batches; stopped handing its "
                     "outcome up", update.bid, MAX_DEPTH)

    def owe_success(self, raw: str, item: SettleItem) -> None:
        """Settle this success before the job ``raw`` is acknowledged."""
        with self._lock:
            self._owed[raw] = item

    def settle_before_ack(self, raws: Sequence[str]) -> None:
        """Settle the successes owed for ``raws`` in one round trip, then hand finished
        batches up; forgotten only once all of it is written (an error propagates: the
        ack waits, and is retried with this)."""
        with self._lock:
            owed = [(raw, self._owed[raw]) for raw in raws if raw in self._owed]
        if not owed:
            return
        updates = self.store.settle_many([item for _, item in owed], self.app.clock(),
                                         self.options.ttl)
        for update in updates:
            if update.cancelled:
                self.note_cancelled(update.bid)
            self.hand_up(update)
        with self._lock:
            for raw, _ in owed:
                self._owed.pop(raw, None)

    def _settle_once(self, bid: str, member: str, outcome: BatchOutcome,
                     callback_queue: str) -> BatchUpdate:
        for pause in (*SETTLE_SLEEPS, None):
            try:
                return self.store.settle(bid, member, outcome, self.app.clock(),
                                         self.options.ttl, callback_queue)
            except BrokerUnavailableError as exc:
                if pause is None:
                    raise BatchSettleError(f"could not record a batch outcome: the broker "
                                           f"stayed unreachable ({exc})") from exc
                logger.warning("recording a batch outcome failed (%s); retrying in %.2f s",
                               exc, pause)
                time.sleep(pause)
        raise AssertionError("the last attempt returns or raises")

    def note_cancelled(self, bid: str) -> None:
        with self._lock:
            self.cancelled = self.cancelled | {bid}

    def refresh_cancelled(self) -> None:
        """Re-read the cancelled bids (each heartbeat, once this process ran a batch job):
        one command a beat, none per job."""
        if not self.seen_batch_job:
            return
        since = self.app.clock() - self.options.ttl
        try:
            fresh = self.store.cancelled_since(since)
        except Exception as exc:
            logger.debug("reading cancelled batches failed: %s", exc)
            return
        with self._lock:
            self.cancelled = frozenset(fresh)


def runtime_of(app: PluginHostBase) -> BatchesRuntime:
    """The app's batches state; :class:`BatchError` when the plugin is not active."""
    runtime = app.extras.get(PLUGIN_NAME)
    if runtime is None:
        _ = app.hooks  # plugins are configured when the hooks are first built
        runtime = app.extras.get(PLUGIN_NAME)
    if not isinstance(runtime, BatchesRuntime):
        raise BatchError("the batches plugin is not active in this app: add 'batches' to "
                         "its plugins (settings 'plugins', or --plugin batches)")
    return runtime
