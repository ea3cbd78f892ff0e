"""The parent vouches for children that are alive but not beating.

A child beats from a thread of its own, which needs the GIL: a job that holds the GIL
inside one C call (a catastrophic regular expression, a C extension that never releases
it) starves that thread, and after ``orphan_threshold`` the fleet would take the busy
child for dead and run its jobs a second time. The supervisor is a separate process,
untouched by its children's GIL. Every ``heartbeat_interval`` it looks at each child's
presence record; one that missed more than a beat while the OS shows the child running
or sleeping (not stopped, not a zombie) is beaten for by the parent, with the child's own
last record (info, busy, quiet) and as a holder, so its last beat stays fresh and its
jobs stay its own. A child the OS has stopped (SIGSTOP, a debugger) gets no vouch: it
ages like any frozen process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from cogworker.core.broker import ProcessRecord

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.supervisor.children import Child

logger = logging.getLogger("cogworker.supervisor")

_RUNNING_STATES: Final = frozenset("RSD")  # running, sleeping, in uninterruptible I/O


def os_state(pid: int, proc: Path = Path("/proc")) -> str | None:
    """The one-letter state of process ``pid`` (``R``, ``S``, ``T``, ``Z``...), or None."""
    try:
        stat = (proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
        return stat.rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


class Vouching:
    """Beats for live, non-beating children on behalf of the fleet's recovery."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._last: dict[str, ProcessRecord] = {}
        self._vouching: set[str] = set()
        self._next = 0.0

    def due(self, now: float) -> bool:
        if now < self._next:
            return False
        self._next = now + self.app.settings.heartbeat_interval
        return True

    def vouch(self, children: Iterable[Child]) -> None:
        """One round: vouch for every child that is alive and has missed its beats."""
        for child in children:
            if child.process.poll() is None and os_state(child.pid) in _RUNNING_STATES:
                self._vouch_for(child)

    def forget(self, identity: str) -> None:
        self._last.pop(identity, None)
        self._vouching.discard(identity)

    def _vouch_for(self, child: Child) -> None:
        settings = self.app.settings
        processes = self.app.broker.processes
        try:
            record = processes.get(child.identity)
        except Exception as exc:
            logger.debug("reading the record of %s failed: %s", child.identity, exc)
            return
        fresh_above = settings.heartbeat_ttl - 2 * settings.heartbeat_interval
        if record is not None and (record.expires_in is None or record.expires_in > fresh_above):
            self._last[child.identity] = record
            if child.identity in self._vouching:
                self._vouching.discard(child.identity)
                logger.info("supervisor: child pid=%d beats again", child.pid)
            return
        known = record or self._last.get(child.identity)
        if known is None:
            return  # never beaten yet: it holds no job
        queues = known.info.get("queues")
        try:
            processes.beat(child.identity, known.info, known.busy, known.quiet,
                           list(dict.fromkeys(queues)) if isinstance(queues, list) else [],
                           ttl=settings.heartbeat_ttl, holds_jobs=True)
        except Exception as exc:
            logger.debug("vouching for %s failed: %s", child.identity, exc)
            return
        if child.identity not in self._vouching:
            self._vouching.add(child.identity)
            logger.warning("supervisor: child pid=%d slot=%d missed its beats at %s but is "
                           "running; the supervisor beats for it (a job holding the GIL?)",
                           child.pid, child.slot, time.strftime("%H:%M:%S"))
