"""A phased restart (USR2): the children are replaced one at a time.

For each child that ran when the restart was asked for, in slot order: a replacement is
started in its slot and the old child is stopped gracefully (it takes no new job and
finishes its running ones). The next child is only touched once the old one has exited
and the replacement has beaten (its presence record exists), so at most one process is
ever between jobs: capacity never drops by more than one. A replacement that does not
come up within :data:`READY_TIMEOUT` seconds does not hold the restart up for ever.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from cogworker.supervisor.children import Child

if TYPE_CHECKING:
    from cogworker.supervisor.supervisor import Supervisor

logger = logging.getLogger("cogworker.supervisor")

READY_TIMEOUT: Final = 60.0
REASON: Final = "phased restart"


@dataclass(slots=True)
class _Step:
    old_pid: int
    replacement: Child
    deadline: float
    old_gone: bool = False


@dataclass(slots=True)
class PhasedRestart:
    """The children still to replace, and the replacement in progress."""

    waiting: list[int] = field(default_factory=list)
    step: _Step | None = None

    @property
    def active(self) -> bool:
        return self.step is not None or bool(self.waiting)

    def begin(self, children: list[Child]) -> None:
        """Replace ``children`` (a restart asked during one adds whoever is not queued)."""
        queued = set(self.waiting) | ({self.step.replacement.pid} if self.step else set())
        self.waiting.extend(child.pid for child in children if child.pid not in queued)

    def cancel(self) -> None:
        self.waiting.clear()
        self.step = None

    def exited(self, supervisor: Supervisor, child: Child) -> None:
        """A child the supervisor stopped has exited."""
        if self.step is not None and child.pid == self.step.old_pid:
            self.step.old_gone = True
            self.advance(supervisor)

    def advance(self, supervisor: Supervisor) -> None:
        """Finish the step in progress when it is done, then start the next one."""
        if self.step is not None:
            if not self._step_done(supervisor, self.step):
                return
            self.step = None
            if not self.waiting:
                logger.info("supervisor: phased restart done")
        while self.waiting and self.step is None:
            child = supervisor.children.get(self.waiting.pop(0))
            if child is None or child.stopping:
                continue  # exited or already on its way out: nothing to replace
            replacement = supervisor.replace(child, REASON)
            self.step = _Step(child.pid, replacement, time.monotonic() + READY_TIMEOUT)

    def _step_done(self, supervisor: Supervisor, step: _Step) -> bool:
        if not step.old_gone:
            return False
        if step.replacement.pid not in supervisor.children:
            return True  # the replacement crashed: the respawn path owns that slot now
        if time.monotonic() >= step.deadline:
            logger.warning("supervisor: replacement pid=%d has not beaten within %.0fs; "
                           "going on with the restart", step.replacement.pid, READY_TIMEOUT)
            return True
        try:
            return supervisor.app.broker.processes.get(step.replacement.identity) is not None
        except Exception:  # unreachable broker: not ready yet, look again next tick
            return False
