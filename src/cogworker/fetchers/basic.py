"""The ``basic`` fetch strategy: one blocking pop over every queue, nothing held.

Fast and works on any broker, but a job popped by a process that then dies (SIGKILL,
out-of-memory, power loss) is lost: it exists only in that process's memory. Use the
``reliable`` strategy when that matters. ``docs/explanation/fetching.md`` compares them.
Written against the broker contract only: ``broker.queues`` to take and give back,
``broker.sets`` and ``broker.held`` to file failures, ``broker.processes`` to find what
this process ran at shutdown.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cogworker.core.broker import (
    Broker,
    RecoveryOptions,
    RecoveryReport,
    Relock,
    SortedSetName,
    UnitOfWork,
)
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.markers import hookimpl
from cogworker.core.payload import DEFAULT_QUEUE, dumps
from cogworker.core.plugin_host import PluginHost
from cogworker.fetchers.recovery import hook_relock, process_recovery, recovery_pass
from cogworker.fetchers.weighted import ALL_PAUSED_PAUSE, fetch_order, unpaused

logger = logging.getLogger(__name__)

MIN_BLOCK = 0.01
"""Seconds a blocking pop waits at least (0 would mean forever)."""


def canonical(payloads: Iterable[str]) -> Counter[str]:
    """Payloads re-encoded the way :func:`dumps` writes them, to compare by content."""
    found: Counter[str] = Counter()
    for raw in payloads:
        try:
            found[dumps(json.loads(raw))] += 1
        except Exception:  # not JSON, or nested too deep to parse: compare the bytes
            found[raw] += 1
    return found


class BasicFetcher:
    """Pops jobs with one blocking pop over every queue: no polling, nothing held."""

    name = "basic"
    reliable = False

    def __init__(self, broker: Broker, identity: str, *, relock: Relock | None = None,
                 rng: random.Random | None = None, strict: bool = False) -> None:
        self._broker = broker
        self._strict = strict
        self.identity = identity
        self.relock = relock
        self._rng = rng or random.Random()
        self._closed = threading.Event()
        self._holds_supported: bool | None = None

    def holds_jobs(self) -> bool:
        """False: a popped job lives only in this process's memory."""
        return False

    def fetch(self, queues: Sequence[str], timeout: float, max_jobs: int = 1) -> list[UnitOfWork]:
        """Pop one job, blocking up to ``timeout`` on all queues at once (``max_jobs`` is
        ignored: a popped job only lives in memory, so we never take more than one)."""
        order = fetch_order(unpaused(queues, self._broker.queues.paused()), self._rng,
                            self._strict)
        if not order or self._closed.is_set():
            self._closed.wait(min(timeout, ALL_PAUSED_PAUSE))
            return []
        work = self._broker.queues.pop_blocking(order, max(timeout, MIN_BLOCK))
        return [] if work is None else [work]

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        """Nothing to do: a popped job already left the store."""

    def give_back(self, work: UnitOfWork) -> bool:
        """Back on the pop end of its queue (its lock re-taken), idle fetchers woken."""
        self._broker.queues.push_back(work, self.relock)
        return True

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        """File the record into retry or dead (nothing is held to drop)."""
        self._broker.sets.file(set_name, score, record)
        return True

    def park_unsettled(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                       record: str) -> bool:
        """Hand a failure this process could not file to any live process."""
        self._broker.held.hand_over(set_name, score, record)
        return True

    def in_progress(self) -> list[str]:
        """Nothing is held in the store by a basic fetcher."""
        return []

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        """At shutdown: requeue every job this process's running-work record lists, except
        those in ``finished`` or ``keep`` (compared by content). Each requeue is atomic
        (and re-takes the job's lock). Returns how many were requeued."""
        skip = canonical(finished) + canonical(keep)
        requeued = 0
        for running in self._broker.processes.work(self.identity):
            payload = dumps(dict(running.work.payload))
            if skip[payload] > 0:
                skip[payload] -= 1
                continue
            self._broker.queues.push_back(UnitOfWork(_queue_of(running.work.payload), payload),
                                          self.relock)
            requeued += 1
        return requeued

    def recover_orphans(self, own_identity: str, options: RecoveryOptions) -> RecoveryReport:
        """``broker.held``'s recovery, when this broker can hold jobs: a fleet may mix
        strategies, and a reliable process's fallback leaves held jobs behind."""
        try:
            supported = self._can_hold()
        except BrokerUnavailableError:
            return RecoveryReport(connection_lost=True)
        if not supported:
            return RecoveryReport(registry_read=True)
        return recovery_pass(self._broker, own_identity, options, self.relock)

    def recover_process(self, identity: str, options: RecoveryOptions) -> RecoveryReport:
        return process_recovery(self._broker, identity, options, self.relock)

    def _can_hold(self) -> bool:
        if self._holds_supported is None:
            self._holds_supported = self._broker.held.supported() is None
        return self._holds_supported

    def close(self) -> None:
        """Wake a fetch waiting on paused queues; idempotent."""
        self._closed.set()


def _queue_of(payload: Mapping[str, Any]) -> str:
    queue = payload.get("queue")
    return queue if isinstance(queue, str) and queue else DEFAULT_QUEUE


@hookimpl(trylast=True)  # type: ignore[untyped-decorator, unused-ignore]
def cogworker_make_fetcher(app: PluginHost, broker: Broker) -> BasicFetcher:
    """The basic fetcher: it runs on every broker (the last resort of the fetch slot)."""
    return BasicFetcher(broker, app.identity, relock=hook_relock(app),
                        strict=app.settings.strict_queue_order)
