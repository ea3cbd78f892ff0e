"""Batches as the ``batches`` plugin stores them, reached as ``app.batches``::

    info = app.batches.get(bid)          # BatchInfo (frozen), or None
    info.counts.pending, info.state, info.fired
    page = app.batches.jobs(bid, state="failed", page=1)   # members, paged
    for info in app.batches.list(page=1).items: ...
    app.batches.cancel(bid)              # no callback fires; its waiting jobs are deleted
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from cogworker.core.broker.batches import (
    BATCHES,
    MEMBER_STATES,
    BatchCounts,
    BatchRecord,
    BatchState,
    BatchStore,
    MemberState,
)
from cogworker.plugins.batches.errors import BatchError

if TYPE_CHECKING:
    from cogworker.core.plugin_host import PluginHost

T = TypeVar("T")
DEFAULT_PER_PAGE = 25
MAX_PER_PAGE = 1000


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """One batch: ``fired`` maps each callback kind that fired to when (epoch seconds);
    ``callbacks`` names the kinds it has."""

    bid: str
    description: str
    created_at: float
    state: BatchState
    counts: BatchCounts
    fired: dict[str, float]
    callbacks: tuple[str, ...]
    callback_queue: str
    parent: str | None
    cancelled_at: float | None

    @classmethod
    def of(cls, record: BatchRecord) -> BatchInfo:
        return cls(bid=record.bid, description=record.description,
                   created_at=record.created_at, state=record.state, counts=record.counts,
                   fired=dict(record.fired), callbacks=record.callbacks,
                   callback_queue=record.callback_queue, parent=record.parent,
                   cancelled_at=record.cancelled_at)

    def to_dict(self) -> dict[str, object]:
        return {"bid": self.bid, "description": self.description,
                "created_at": self.created_at, "state": self.state,
                "counts": self.counts.to_dict(), "fired": self.fired,
                "callbacks": list(self.callbacks), "callback_queue": self.callback_queue,
                "parent": self.parent, "cancelled_at": self.cancelled_at}


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page: ``items``, the 1-based ``page``, ``per_page`` and ``total`` in all."""

    items: list[T]
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


@dataclass(frozen=True, slots=True)
class CancelResult:
    """``cancelled``: False when the batch is unknown; ``deleted``: waiting jobs removed."""

    cancelled: bool
    deleted: int


def _checked_page(page: int, per_page: int) -> tuple[int, int]:
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise ValueError(f"page is a number from 1, not {page!r}")
    if (isinstance(per_page, bool) or not isinstance(per_page, int)
            or not 1 <= per_page <= MAX_PER_PAGE):
        raise ValueError(f"per_page is a number from 1 to {MAX_PER_PAGE}, not {per_page!r}")
    return (page - 1) * per_page, per_page


class Batches:
    """Reading and cancelling batches of one app."""

    def __init__(self, app: PluginHost) -> None:
        self._app = app

    @property
    def _store(self) -> BatchStore:
        store = self._app.broker.extension(BATCHES)
        if store is None:
            raise BatchError(f"the {self._app.broker.name} broker keeps no batches")
        return store

    def get(self, bid: str) -> BatchInfo | None:
        """The batch, or None (unknown, or its data expired)."""
        record = self._store.get(bid)
        return BatchInfo.of(record) if record is not None else None

    def jobs(self, bid: str, state: MemberState = "all", page: int = 1,
             per_page: int = 100) -> Page[str]:
        """A page of the batch's members (jids; ``batch:<bid>`` for child batches) in
        ``state``: all, pending (not succeeded yet), succeeded, failed, dead."""
        if state not in MEMBER_STATES:
            raise ValueError(f"state must be one of {', '.join(MEMBER_STATES)}, not "
                             f"{state!r}")
        start, count = _checked_page(page, per_page)
        members, total = self._store.members(bid, state, start, count)
        return Page(members, page, per_page, total)

    def list(self, page: int = 1, per_page: int = DEFAULT_PER_PAGE) -> Page[BatchInfo]:
        """Batches, newest first."""
        start, count = _checked_page(page, per_page)
        records, total = self._store.page(start, count)
        return Page([BatchInfo.of(r) for r in records], page, per_page, total)

    def cancel(self, bid: str) -> CancelResult:
        """Cancel the batch: no callback fires from now on, its jobs still queued,
        scheduled or waiting to retry are deleted (each removal atomic), and workers skip
        any of its jobs they fetch later (they learn within a heartbeat)."""
        from cogworker.plugins.batches.runtime import runtime_of

        ttl = runtime_of(self._app).options.ttl
        store = self._store
        if not store.cancel(bid, self._app.clock(), ttl):
            return CancelResult(cancelled=False, deleted=0)
        deleted = store.delete_waiting(bid, self._app.broker.queues.names())
        return CancelResult(cancelled=True, deleted=deleted)
