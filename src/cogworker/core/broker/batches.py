"""``broker.extension(BATCHES)``: groups of jobs whose callbacks fire exactly once.

A batch is a set of **members** (job jids, and ``batch:<bid>`` for a child batch) and up
to three callbacks, each a complete job payload kept as a *template*. Every change is one
atomic step of the store that records the member's outcome *and* decides and pushes the
callbacks it makes due, so no crash can fall between "the last one is done" and "the
callback is on its queue"; a fired-flag per callback makes every step idempotent per
member (run it twice: nothing changes the second time).

Outcomes (:data:`BatchOutcome`) of one member:

* ``success`` — it succeeded (also after earlier failures);
* ``failure`` — one run failed; the first failure counts it as *run once* for ``complete``;
* ``dead`` — it ran and went to dead (or was discarded): run once, never succeeds;
* ``death`` — a child batch saw a death (the member has not finished running);
* ``cancelled`` — skipped unrun because its batch was cancelled.

Callbacks (Sidekiq Pro's): ``complete`` once every member ran once; ``success`` once every
member succeeded; ``death`` at the first ``dead``/``death`` outcome. None fires before the
batch is **sealed** (registered with its spec) or after it was cancelled. Outcomes that
arrive before the seal are kept and count at the seal, so jobs may be pushed before their
batch is sealed (the order cogworker uses: a crash in between leaves no stuck batch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from cogworker.core.broker.composite import Extension

BatchOutcome = Literal["success", "failure", "dead", "death", "cancelled"]
BATCH_OUTCOMES: tuple[str, ...] = get_args(BatchOutcome)

CallbackKind = Literal["complete", "success", "death"]
CALLBACK_KINDS: tuple[CallbackKind, ...] = ("death", "complete", "success")
"""In the order they fire when one step makes several due."""

MemberState = Literal["all", "pending", "succeeded", "failed", "dead"]
MEMBER_STATES: tuple[str, ...] = get_args(MemberState)

BatchState = Literal["open", "running", "complete", "success", "cancelled"]
"""``open``: not sealed yet; ``running``; ``complete`` (every member ran once, some not
succeeded); ``success``; ``cancelled``."""

CHILD_PREFIX = "batch:"
"""A child batch is the member ``batch:<child bid>`` of its parent."""

ARGS_PLACEHOLDER = '"@@batch-args@@"'
"""Where a callback template's ``args`` go: the store writes ``[bid, counts, *extra]``."""
NOW_PLACEHOLDER = '"@@batch-now@@"'
"""Where a callback template's ``enqueued_at`` goes: the time of the step that fires it."""


@dataclass(frozen=True, slots=True)
class BatchCounts:
    """``total`` members; ``pending`` not succeeded yet; ``succeeded``; ``failed`` (failed
    and not succeeded since, not dead); ``dead``."""

    total: int = 0
    pending: int = 0
    succeeded: int = 0
    failed: int = 0
    dead: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"total": self.total, "pending": self.pending, "succeeded": self.succeeded,
                "failed": self.failed, "dead": self.dead}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchCounts:
        """The counts a callback receives (its second argument) as this dataclass."""
        return cls(**{name: int(data.get(name, 0)) for name in
                      ("total", "pending", "succeeded", "failed", "dead")})


@dataclass(frozen=True, slots=True)
class CallbackTemplate:
    """One callback: ``raw`` is its complete payload (class, queue, jid...) with
    :data:`ARGS_PLACEHOLDER` and :data:`NOW_PLACEHOLDER` in it; ``extra`` the JSON of its
    extra arguments without the brackets (``'7,"x"'``, or ``''``)."""

    kind: CallbackKind
    raw: str
    extra: str = ""


@dataclass(frozen=True, slots=True)
class BatchSpec:
    """What sealing a batch writes. ``callback_queue``: where its callbacks are pushed
    (every callback of one batch goes to one queue, as in Sidekiq Pro)."""

    bid: str
    created_at: float
    description: str = ""
    callback_queue: str = "default"
    parent: str | None = None
    parent_callback_queue: str | None = None
    callbacks: tuple[CallbackTemplate, ...] = ()


@dataclass(frozen=True, slots=True)
class SettleItem:
    """One outcome to record with :meth:`BatchStore.settle_many`."""

    bid: str
    member: str
    outcome: BatchOutcome
    callback_queue: str = "default"


@dataclass(frozen=True, slots=True)
class BatchUpdate:
    """What one step saw: the callbacks it fired (in order), and the batch's flags after
    it. ``finished`` holds the kinds fired by this or any earlier step."""

    bid: str
    fired: tuple[CallbackKind, ...] = ()
    finished: frozenset[CallbackKind] = frozenset()
    sealed: bool = False
    cancelled: bool = False
    parent: str | None = None
    parent_callback_queue: str | None = None

    def parent_outcomes(self) -> tuple[BatchOutcome, ...]:
        """What this batch's state means for its member in its parent (idempotent, so it
        is safe to hand on again after a crash)."""
        outcomes: list[BatchOutcome] = []
        if "death" in self.finished:
            outcomes.append("death")
        if "success" in self.finished:
            outcomes.append("success")
        elif "complete" in self.finished:
            outcomes.append("failure")
        return tuple(outcomes)


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """A batch as stored. ``fired``: callback kind → when it fired (epoch seconds)."""

    bid: str
    description: str
    created_at: float
    callback_queue: str
    counts: BatchCounts
    state: BatchState
    fired: Mapping[str, float] = field(default_factory=dict)
    callbacks: tuple[str, ...] = ()
    parent: str | None = None
    cancelled_at: float | None = None


def spec_fields(spec: BatchSpec) -> list[str]:
    """The hash fields a seal writes, as a flat field/value list."""
    fields = ["description", spec.description, "created_at", repr(spec.created_at),
              "queue", spec.callback_queue]
    if spec.parent:
        fields += ["parent", spec.parent, "parent_queue",
                   spec.parent_callback_queue or spec.callback_queue]
    for callback in spec.callbacks:
        fields += [f"cb:{callback.kind}", callback.raw, f"cbx:{callback.kind}", callback.extra]
    return fields


def record_from_fields(bid: str, fields: dict[str, str], counts: BatchCounts) -> BatchRecord:
    """A :class:`BatchRecord` from a batch hash's fields (both stores keep these fields)."""
    fired: dict[str, float] = {kind: float(fields[f"{kind}_at"]) for kind in CALLBACK_KINDS
             if f"{kind}_at" in fields}
    cancelled = fields.get("cancelled_at")
    state: BatchState
    if cancelled is not None:
        state = "cancelled"
    elif "success" in fired:
        state = "success"
    elif "complete" in fired:
        state = "complete"
    else:
        state = "running"
    return BatchRecord(
        bid=bid, description=fields.get("description", ""),
        created_at=float(fields.get("created_at", 0.0)),
        callback_queue=fields.get("queue", "default"), counts=counts, state=state,
        fired=fired, callbacks=tuple(k for k in CALLBACK_KINDS if f"cb:{k}" in fields),
        parent=fields.get("parent") or None,
        cancelled_at=float(cancelled) if cancelled is not None else None)


class BatchStore(Protocol):
    """Batches. Thread-safe; raises the broker's errors. Every method is one round trip
    unless it says otherwise."""

    def register(self, bid: str, members: Sequence[str], now: float, ttl: float,
                 spec: BatchSpec | None = None, callback_queue: str = "default"
                 ) -> BatchUpdate:
        """Add ``members`` (atomic, idempotent). With ``spec``: seal the batch (a second
        seal of the same bid keeps the first spec). Then fire what is due. ``ttl``: how
        long the batch's data lives once it completed or was cancelled."""
        ...

    def settle(self, bid: str, member: str, outcome: BatchOutcome, now: float, ttl: float,
               callback_queue: str = "default") -> BatchUpdate:
        """Record one member's outcome and fire what it makes due (atomic; a second call
        with the same member and outcome changes nothing). ``callback_queue``: the
        batch's (the caller knows it from the job's payload)."""
        ...

    def settle_many(self, items: Sequence[SettleItem], now: float, ttl: float
                    ) -> list[BatchUpdate]:
        """:meth:`settle` for each item, in order, in one round trip (each item its own
        atomic step); the updates in the same order."""
        ...

    def get(self, bid: str) -> BatchRecord | None:
        """The batch, or None (unknown, or expired)."""
        ...

    def members(self, bid: str, state: MemberState, start: int, count: int
                ) -> tuple[list[str], int]:
        """A page of members in ``state`` (sorted), and how many there are in all."""
        ...

    def page(self, start: int, count: int) -> tuple[list[BatchRecord], int]:
        """Batches newest first, and how many the index holds (expired ones are dropped
        from the index as they are met)."""
        ...

    def cancel(self, bid: str, now: float, ttl: float) -> bool:
        """Mark the batch cancelled (no callback fires after this) and announce it;
        False when it is unknown. Deleting its waiting jobs is :meth:`delete_waiting`."""
        ...

    def delete_waiting(self, bid: str, queues: Sequence[str]) -> int:
        """Delete the batch's jobs still in ``queues``, schedule or retry (each removal
        atomic, matched on its exact raw); how many. Several round trips (a scan)."""
        ...

    def cancelled_since(self, since: float) -> set[str]:
        """Bids cancelled at or after ``since`` (what a worker skips at start)."""
        ...


DEFAULT_BATCH_TTL = 7 * 24 * 3600.0
"""Seconds a batch's data lives after it completes or is cancelled (Sidekiq's default)."""

BATCHES: Extension[BatchStore] = Extension("batches", "job batches with exactly-once callbacks")
