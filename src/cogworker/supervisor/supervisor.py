"""The supervisor's loop: N children in slots, kept running until a stop.

Every :data:`TICK` seconds (or at once on a signal) the loop acts on queued signal
tokens, reaps exited children (recovering each one's jobs at once), beats for live
children that cannot (:mod:`.vouching`), starts due respawns,
replaces children over ``max_memory_mb``, moves a phased restart on by one child, and
SIGKILLs children still alive after their grace period. It ends when stopping and no child
is left. The parent runs no jobs and starts no threads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from cogworker.supervisor import relay
from cogworker.supervisor.backoff import CrashStreak
from cogworker.supervisor.children import Child, resident_memory_mb, spawn
from cogworker.supervisor.hard_limits import HardLimits
from cogworker.supervisor.notify_relay import NotifyRelay
from cogworker.supervisor.phased import PhasedRestart
from cogworker.supervisor.recovery import ChildRecovery
from cogworker.supervisor.vouching import Vouching

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.supervisor")

TICK: Final = 0.2
CHECK_INTERVAL: Final = 1.0  # between memory and hard time limit checks


@dataclass(frozen=True, slots=True)
class SupervisorOptions:
    """``processes`` children; ``grace``: seconds from a TERM to a SIGKILL;
    ``max_memory_mb``: resident memory after which a child is replaced (None: never)."""

    processes: int
    grace: float
    max_memory_mb: float | None = None


@dataclass(slots=True)
class _Slots:
    streaks: dict[int, CrashStreak] = field(default_factory=dict)
    respawn_at: dict[int, float] = field(default_factory=dict)


class Supervisor:
    """Runs ``command`` (a ``cogworker run`` line) in ``options.processes`` children."""

    def __init__(self, app: App, command: Sequence[str], options: SupervisorOptions,
                 tokens: relay.Tokens | None = None) -> None:
        self.app = app
        self.command = list(command)
        self.options = options
        self.identity = app.identity
        self.tokens: relay.Tokens = tokens if tokens is not None else relay.Tokens()
        self.children: dict[int, Child] = {}
        self.recovery = ChildRecovery(app)
        self.stopping = False
        self._slots = _Slots()
        self._phased = PhasedRestart()
        self.hard_limits = HardLimits(app)
        self.vouching = Vouching(app)
        self.notify = NotifyRelay.from_environment(options.processes)
        self._checked = 0.0

    def run(self) -> int:
        """Start the children and supervise them until a stop; returns the exit status."""
        installed = relay.install(self.tokens)
        try:
            logger.info("supervisor started identity=%s pid=%d processes=%d", self.identity,
                        os.getpid(), self.options.processes)
            for slot in range(self.options.processes):
                self._start(slot)
            while not (self.stopping and not self.children):
                self.tick()
            logger.info("supervisor stopped identity=%s", self.identity)
            return 0
        finally:
            installed.restore()
            self.recovery.close()
            self.notify.close()

    def tick(self) -> None:
        """One round of the loop (waits up to :data:`TICK` for a signal token)."""
        with contextlib.suppress(queue.Empty):
            self._handle(self.tokens.get(timeout=TICK))
        while not self.tokens.empty():
            self._handle(self.tokens.get_nowait())
        self._reap()
        self.notify.poll(self.children.keys())
        self.recovery.retry_pending()
        now = time.monotonic()
        if self.vouching.due(now):
            self.vouching.vouch(list(self.children.values()))
        if not self.stopping:
            self._respawn_due(now)
            self._phased.advance(self)
            if now >= self._checked + CHECK_INTERVAL:
                self._checked = now
                self._check_children(time.time())
        self._kill_stragglers(now)

    # signals ----------------------------------------------------------------------------
    def _handle(self, token: str) -> None:
        if token == relay.STOP:
            self.stop()
        elif token == relay.QUIET:
            logger.info("supervisor: quiet signal received, relaying TSTP to %d child(ren)",
                        len(self.children))
            for child in self.children.values():
                child.send(signal.SIGTSTP)
        elif token == relay.RESTART:
            self.restart()
        elif token != relay.CHILD:
            logger.warning("supervisor: ignoring unknown signal token %r", token)

    def stop(self) -> None:
        """Stop every child gracefully; the loop ends once they are all gone."""
        if self.stopping:
            return
        logger.info("supervisor: stop signal received, stopping %d child(ren) (SIGKILL "
                    "after %.0fs)", len(self.children), self.options.grace)
        self.stopping = True
        self.notify.stopping()
        self._slots.respawn_at.clear()
        self._phased.cancel()
        for child in self.children.values():
            child.ask_to_stop("supervisor stopping", self.options.grace)

    def restart(self) -> None:
        """A phased restart: every child now running is replaced, one at a time."""
        if self.stopping:
            return
        logger.info("supervisor: restart signal received, replacing %d child(ren) one at a "
                    "time", len(self.children))
        self._phased.begin(sorted(self.children.values(), key=lambda child: child.slot))

    # children ---------------------------------------------------------------------------
    def _start(self, slot: int) -> Child:
        child = spawn(slot, self.command, self.identity, self.notify.child_environment())
        self.children[child.pid] = child
        logger.info("supervisor: started child pid=%d slot=%d identity=%s", child.pid, slot,
                    child.identity)
        return child

    def _reap(self) -> None:
        for pid, child in list(self.children.items()):
            status = child.process.poll()
            if status is None:
                continue
            del self.children[pid]
            if child.stuck:  # filed as failed first: they are not orphans to run again
                self.hard_limits.file_timed_out(child.identity, child.stuck)
            self.hard_limits.forget(child.identity)
            self.vouching.forget(child.identity)
            self.recovery.recover(child.identity)  # the OS vouches: no threshold to wait
            self._after_exit(child, status)

    def _after_exit(self, child: Child, status: int) -> None:
        how = describe_exit(status)
        if child.stopping:
            logger.info("supervisor: child pid=%d slot=%d %s after %.1fs (%s)", child.pid,
                        child.slot, how, child.uptime, child.reason)
            self._phased.exited(self, child)
            return
        if self.stopping:
            return
        if status == 0:
            logger.info("supervisor: child pid=%d slot=%d stopped by itself after %.1fs "
                        "(--max-jobs reached or a remote stop); replacing it", child.pid,
                        child.slot, child.uptime)
            self._start(child.slot)
            return
        delay = self._slots.streaks.setdefault(child.slot, CrashStreak()).record_exit(
            child.uptime)
        logger.warning("supervisor: child pid=%d slot=%d exited unexpectedly (%s) after "
                       "%.1fs, respawning in %gs", child.pid, child.slot, how, child.uptime,
                       delay)
        self._slots.respawn_at[child.slot] = time.monotonic() + delay

    def _respawn_due(self, now: float) -> None:
        for slot, due in list(self._slots.respawn_at.items()):
            if now >= due:
                del self._slots.respawn_at[slot]
                self._start(slot)

    def replace(self, child: Child, reason: str) -> Child:
        """Start a replacement in ``child``'s slot, then stop ``child`` gracefully: its
        running jobs finish while the replacement already takes new ones."""
        replacement = self._start(child.slot)
        logger.info("supervisor: replacing child pid=%d slot=%d (%s): it finishes its "
                    "running jobs and exits", child.pid, child.slot, reason)
        child.ask_to_stop(reason, self.options.grace)
        return replacement

    def _check_children(self, now: float) -> None:
        limit_mb = self.options.max_memory_mb
        for child in list(self.children.values()):
            if child.stopping:
                continue
            stuck = self.hard_limits.overdue(child, now)
            if stuck:
                self._replace_stuck(child, stuck)
                continue
            rss = resident_memory_mb(child.pid) if limit_mb is not None else None
            if limit_mb is not None and rss is not None and rss > limit_mb:
                logger.warning("supervisor: child pid=%d slot=%d uses %.0f MB (over "
                               "--max-memory %g MB); replacing it after its running jobs",
                               child.pid, child.slot, rss, limit_mb)
                self.replace(child, f"recycled at {rss:.0f} MB")

    def _replace_stuck(self, child: Child, stuck: list[Mapping[str, Any]]) -> None:
        """A job past its hard limit: kill the child now (it cannot be trusted to stop), and
        file the job as failed once it is reaped."""
        jids = ", ".join(str(job.get("jid")) for job in stuck)
        logger.warning("supervisor: child pid=%d slot=%d runs %s past the hard time limit "
                       "(time limit + %g s grace); killing and replacing it", child.pid,
                       child.slot, jids, self.app.settings.time_limit_grace)
        self._start(child.slot)
        child.stopping, child.reason, child.stuck = True, "hard time limit", list(stuck)
        child.send(signal.SIGKILL)

    def _kill_stragglers(self, now: float) -> None:
        for child in self.children.values():
            if child.kill_at is not None and now >= child.kill_at:
                logger.warning("supervisor: child pid=%d slot=%d didn't stop within %.0fs, "
                               "killing it", child.pid, child.slot, self.options.grace)
                child.kill_at = None
                child.send(signal.SIGKILL)


def describe_exit(status: int) -> str:
    """``-9`` → ``"killed by SIGKILL"``, ``3`` → ``"exited with status 3"``."""
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exited with status {status}"
