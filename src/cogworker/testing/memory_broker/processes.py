"""``broker.processes`` in memory: presence with a TTL, running work, remote control.

What a process reports (``info``, the work records) is copied in and out, as a store that
serializes it would: a caller changing its own mapping afterwards changes nothing stored.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from cogworker.core.broker import (
    SIGNALS,
    ProcessRecord,
    RunningJob,
    Subscription,
    WorkRecord,
)
from cogworker.testing.memory_broker.state import (
    SIGNAL_CHANNEL_PREFIX,
    MemoryState,
    Presence,
    WorkTable,
    require_name,
)

LIVE_QUEUES_KEPT = 86_400.0
"""Seconds a queue's "read by a live process" stamp is kept (as the Redis beat prunes it)."""


def _identity(identity: str) -> str:
    return require_name(identity, "a process identity")


def _copied(work: WorkRecord) -> WorkRecord:
    return WorkRecord(work.queue, copy.deepcopy(dict(work.payload)), work.run_at)


class MemoryProcesses:
    """The :class:`~cogworker.core.broker.ProcessRegistry` of a memory broker."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state

    # this process --------------------------------------------------------------------------
    def beat(self, identity: str, info: Mapping[str, Any], busy: int, quiet: bool,
             queues: Sequence[str], ttl: float, holds_jobs: bool) -> None:
        _identity(identity)
        state = self._state
        with state.lock:
            now = state.now()
            state.presence[identity] = Presence(copy.deepcopy(dict(info)), busy, quiet,
                                                now + ttl)
            state.processes.add(identity)
            for queue in dict.fromkeys(queues):
                state.registered.add(require_name(queue, "a queue name"))
                state.live_queues[queue] = now
            for queue in [q for q, seen in state.live_queues.items()
                          if seen < now - LIVE_QUEUES_KEPT]:
                del state.live_queues[queue]
            table = state.work_of(identity)
            if table is not None:
                table.expires_at = now + ttl
            if holds_jobs:
                state.holders.add(identity)
                state.last_beat[identity] = now

    def remove(self, identity: str) -> None:
        _identity(identity)
        state = self._state
        with state.lock:
            state.presence.pop(identity, None)
            state.work.pop(identity, None)
            state.processes.discard(identity)
            if not state.held.get(identity):
                state.holders.discard(identity)
                state.last_beat.pop(identity, None)

    def set_work(self, identity: str, tid: str, work: WorkRecord) -> None:
        _identity(identity)
        state = self._state
        with state.lock:
            table = state.work_of(identity)
            if table is None:
                table = state.work[identity] = WorkTable()
            table.works[tid] = _copied(work)

    def clear_work(self, identity: str, tid: str) -> None:
        _identity(identity)
        state = self._state
        with state.lock:
            table = state.work_of(identity)
            if table is not None:
                table.works.pop(tid, None)
                if not table.works:
                    del state.work[identity]

    def replace_work(self, identity: str, works: Mapping[str, WorkRecord], ttl: float) -> None:
        _identity(identity)
        state = self._state
        with state.lock:
            state.work.pop(identity, None)
            if works:
                state.work[identity] = WorkTable(
                    {tid: _copied(work) for tid, work in works.items()}, state.now() + ttl)

    # the fleet -----------------------------------------------------------------------------
    def _record(self, identity: str) -> ProcessRecord | None:
        state = self._state
        presence = state.presence_of(identity)
        if presence is None:
            return None
        return ProcessRecord(identity, copy.deepcopy(presence.info), presence.busy,
                             presence.quiet, state.last_beat.get(identity),
                             max(presence.expires_at - state.now(), 0.0))

    def live(self) -> list[ProcessRecord]:
        state = self._state
        with state.lock:
            records = []
            for identity in sorted(state.processes):
                record = self._record(identity)
                if record is None:
                    state.processes.discard(identity)
                else:
                    records.append(record)
            return records

    def get(self, identity: str) -> ProcessRecord | None:
        with self._state.lock:
            return self._record(_identity(identity))

    def is_dead(self, identity: str, threshold: float) -> bool:
        with self._state.lock:
            return self._state.is_dead(_identity(identity), threshold)

    def work(self, identity: str | None = None) -> list[RunningJob]:
        state = self._state
        with state.lock:
            identities = [_identity(identity)] if identity is not None else \
                [record.identity for record in self.live()]
            running = []
            for name in identities:
                table = state.work_of(name)
                if table is None:
                    continue
                running += [RunningJob(name, tid, _copied(table.works[tid]))
                            for tid in sorted(table.works)]
            return running

    # remote control ------------------------------------------------------------------------
    def signal(self, identity: str, message: str) -> int:
        if message not in SIGNALS:
            raise ValueError(f"{message!r} is not a signal a worker obeys: use one of "
                             f"{', '.join(SIGNALS)}")
        return self._state.channels.publish(SIGNAL_CHANNEL_PREFIX + _identity(identity),
                                            message)

    def subscribe_signals(self, identity: str) -> AbstractContextManager[Subscription]:
        return self._state.channels.subscribe(SIGNAL_CHANNEL_PREFIX + _identity(identity))
