"""What the background threads of a worker process need from the Manager.

:class:`cogworker.worker.manager.Manager` satisfies :class:`ManagerControls` structurally;
the heartbeat, poller and remote control depend on this Protocol only, so each can be
exercised with a stand-in manager against a real broker.
"""

from __future__ import annotations

from typing import Protocol

from cogworker.core.broker import WorkRecord
from cogworker.core.payload import Payload


class ManagerControls(Protocol):
    """The Manager's controls and the state it reports (thread-safe)."""

    def quiet(self) -> None:
        """Stop fetching new jobs (reversible); running jobs finish."""
        ...

    def unquiet(self) -> None:
        """Fetch again after :meth:`quiet`."""
        ...

    @property
    def is_quiet(self) -> bool: ...

    @property
    def busy(self) -> int:
        """How many jobs are running now."""
        ...

    def performing_jobs(self) -> list[Payload]:
        """Payloads whose ``perform`` has started and not yet returned."""
        ...

    def reconcile(self) -> None:
        """Settle pending settlements, requeue held strays seen twice (a strategy that
        holds jobs)."""
        ...

    def take_stray_check(self) -> bool:
        """Whether a reconcile is due out of turn (a fetch failed in a way that may have
        handed this process jobs); counts it as taken."""
        ...

    def work_entries(self) -> dict[str, WorkRecord]:
        """What each processor runs now: tid → its work (queue, payload, start time)."""
        ...

    def handle_dead_jobs(self, stored_raws: list[str], reason: str) -> None:
        """Death hooks and lock releases for jobs another path filed into dead."""
        ...
