"""The state of one memory broker: every structure its facets share, under one lock.

A queue is a deque whose left end is the push end (Redis: ``LPUSH``) and whose right end is
the pop end; a holder's held jobs are a list whose index 0 is the most recently claimed
(Redis: the head of ``inprogress:<identity>``). Anything with a time to live keeps the
instant it expires on the broker's clock and counts as gone from that instant on: expiry is
checked when the thing is read, never by a background thread, so a frozen test clock freezes
every TTL too.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cogworker.core.broker import (
    ORPHAN_COUNTER_TTL,
    SORTED_SET_NAMES,
    THROUGHPUT_HOURS_KEPT,
    LockClaim,
    Relock,
    SortedSetName,
    WorkRecord,
)
from cogworker.core.periodic_types import PeriodicEntry
from cogworker.testing.memory_broker.payloads import counter_id
from cogworker.testing.memory_broker.subscriptions import Channels

logger = logging.getLogger(__name__)

WAKEUP_CHANNEL = "wakeup"
SIGNAL_CHANNEL_PREFIX = "signal:"


@dataclass(slots=True)
class Presence:
    """What a process's last beat said, alive until ``expires_at``."""

    info: dict[str, Any]
    busy: int
    quiet: bool
    expires_at: float


@dataclass(slots=True)
class WorkTable:
    """What the processor threads of one process run (tid → work); ``expires_at`` None
    until a beat or a replace gives it a TTL (as a Redis hash written by HSET alone)."""

    works: dict[str, WorkRecord] = field(default_factory=dict)
    expires_at: float | None = None


@dataclass(slots=True)
class HeldLock:
    owner: str
    expires_at: float | None


@dataclass(slots=True)
class HourTally:
    processed: int = 0
    failed: int = 0
    expires_at: float = 0.0


@dataclass(slots=True)
class Unsettled:
    """A failure handed over for any live process to file."""

    set_name: SortedSetName
    score: float
    record: str


class MemoryState:
    """Every structure of one memory broker; hold :attr:`lock` to read or change any."""

    def __init__(self, clock: Callable[[], float], dead_max_jobs: int,
                 dead_timeout: float) -> None:
        self.clock = clock
        self.dead_max_jobs = dead_max_jobs
        self.dead_timeout = dead_timeout
        self.lock = threading.RLock()
        self.arrival = threading.Condition(self.lock)
        self.channels = Channels(self.lock)
        # queues
        self.queues: dict[str, collections.deque[str]] = {}
        self.registered: set[str] = set()
        self.paused: set[str] = set()
        self.live_queues: dict[str, float] = {}
        # sets: raw -> score
        self.sets: dict[SortedSetName, dict[str, float]] = {name: {} for name in SORTED_SET_NAMES}
        # held jobs and recovery
        self.held: dict[str, list[str]] = {}
        self.holders: set[str] = set()
        self.last_beat: dict[str, float] = {}
        self.orphan_counts: dict[str, tuple[int, float]] = {}
        self.repeat_orphans: list[str] = []
        self.unsettled: list[Unsettled] = []
        # processes
        self.processes: set[str] = set()
        self.presence: dict[str, Presence] = {}
        self.work: dict[str, WorkTable] = {}
        # locks, cron, stats
        self.locks: dict[str, HeldLock] = {}
        self.schedule: dict[str, PeriodicEntry] = {}
        self.disabled: set[str] = set()
        self.last_slots: dict[str, int] = {}
        self.slot_claims: dict[tuple[str, int], float] = {}
        self.processed = 0
        self.failed = 0
        self.hours: dict[int, HourTally] = {}
        # pushes the broker makes itself (a batch's callbacks): see broker_pushes
        self.route_broker_pushes: Callable[[str, str], None] | None = None

    def now(self) -> float:
        return float(self.clock())

    # queues --------------------------------------------------------------------------------
    def queue(self, name: str) -> collections.deque[str]:
        """The deque of queue ``name``, created empty when it has none."""
        return self.queues.setdefault(name, collections.deque())

    def announce(self, queue: str) -> None:
        """``queue`` just received work: wake blocked pops and wake-up subscribers."""
        self.arrival.notify_all()
        self.channels.publish(WAKEUP_CHANNEL, queue)

    @contextlib.contextmanager
    def broker_pushes(self) -> Iterator[list[tuple[str, str]]]:
        """Hold :attr:`lock` for a step that pushes jobs itself, as the Redis broker's
        scripts do (a batch's callbacks): the step appends ``(queue, raw)`` pairs to the
        list it is given. With no route set they go onto their queues before the lock is
        let go, in the same step; with :attr:`route_broker_pushes` set (the fake and inline
        test modes) they are handed to it after, so the route may run a job."""
        pushes: list[tuple[str, str]] = []
        with self.lock:
            route = self.route_broker_pushes
            yield pushes
            if route is None:
                for queue, raw in pushes:
                    self.onto_queue(queue, raw)
                return
        for queue, raw in pushes:
            route(queue, raw)

    def onto_queue(self, queue: str, raw: str) -> None:
        """Push ``raw`` onto ``queue`` as a client's push does (hold :attr:`lock`)."""
        self.queue(queue).appendleft(raw)
        self.registered.add(queue)
        self.announce(queue)

    # held jobs -----------------------------------------------------------------------------
    def drop_held(self, holder: str, raw: str) -> bool:
        """Remove the first (most recently claimed) occurrence of ``raw``; False if none."""
        held = self.held.get(holder)
        if not held or raw not in held:
            return False
        held.remove(raw)
        if not held:
            del self.held[holder]
        return True

    def is_held(self, holder: str, raw: str) -> bool:
        return raw in self.held.get(holder, ())

    def forget_counter(self, raw: str) -> None:
        self.orphan_counts.pop(counter_id(raw), None)

    def orphan_count(self, raw: str) -> int:
        count, expires_at = self.orphan_counts.get(counter_id(raw), (0, 0.0))
        return count if expires_at > self.now() else 0

    def bump_counter(self, raw: str) -> None:
        """One more orphaning of ``raw``'s job; the counter lives 7 days from now."""
        self.orphan_counts[counter_id(raw)] = (self.orphan_count(raw) + 1,
                                               self.now() + ORPHAN_COUNTER_TTL)

    # locks ---------------------------------------------------------------------------------
    def lock_of(self, name: str) -> HeldLock | None:
        """The lock ``name`` if it is held now (an expired one is dropped)."""
        held = self.locks.get(name)
        if held is not None and held.expires_at is not None and held.expires_at <= self.now():
            del self.locks[name]
            return None
        return held

    def hold_lock(self, name: str, owner: str, ttl: float) -> None:
        self.locks[name] = HeldLock(owner, self.now() + ttl)

    def retake(self, claim: LockClaim | None) -> None:
        """Re-take a requeued job's lock: missing → set; the owner's → refreshed; else kept."""
        if claim is None:
            return
        held = self.lock_of(claim.name)
        if held is None or held.owner == claim.owner:
            self.hold_lock(claim.name, claim.owner, claim.ttl)

    # stats -------------------------------------------------------------------------------
    def count_outcomes(self, processed: int, failed: int, now: float) -> None:
        """Add to the totals and to the hour of ``now`` (kept 25 hours from this write)."""
        self.processed += processed
        self.failed += failed
        hour = int(now // 3600)
        tally = self.hours.get(hour)
        if tally is None or tally.expires_at <= self.now():
            tally = self.hours[hour] = HourTally()
        tally.processed += processed
        tally.failed += failed
        tally.expires_at = self.now() + THROUGHPUT_HOURS_KEPT * 3600

    # processes -----------------------------------------------------------------------------
    def presence_of(self, identity: str) -> Presence | None:
        presence = self.presence.get(identity)
        if presence is not None and presence.expires_at <= self.now():
            del self.presence[identity]
            return None
        return presence

    def work_of(self, identity: str) -> WorkTable | None:
        table = self.work.get(identity)
        if table is not None and table.expires_at is not None and table.expires_at <= self.now():
            del self.work[identity]
            return None
        return table

    def is_dead(self, identity: str, threshold: float) -> bool:
        """No presence, and no last beat within ``threshold`` seconds (none counts as old)."""
        if self.presence_of(identity) is not None:
            return False
        last = self.last_beat.get(identity)
        return last is None or self.now() - last > threshold


def lock_claim(relock: Relock | None, raw: str) -> LockClaim | None:
    """What ``relock`` names for ``raw``; an exception from it counts as None (logged)."""
    if relock is None:
        return None
    try:
        return relock(raw)
    except Exception:
        logger.exception("the relock callback failed for a requeued job; it is requeued "
                         "without re-taking a lock: %.200s", raw)
        return None


def require_name(value: str, what: str) -> str:
    """``value`` when it is a non-empty string, else a ``ValueError`` naming ``what``."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, not {value!r}")
    return value


def require_set(set_name: str) -> SortedSetName:
    """``set_name`` when it names one of the three job sets, else a ``ValueError``."""
    for name in SORTED_SET_NAMES:
        if set_name == name:
            return name
    raise ValueError(f"{set_name!r} is not a job set: use one of {', '.join(SORTED_SET_NAMES)}")
