"""The cron ticker: every process ticks, one atomic claim per slot decides who fires it.

There is no leader. Each process looks at every entry as soon as the earliest next slot of
its entries comes due, and at least every ``tick_interval`` seconds
(:mod:`cogworker.periodic.next_wake`): the slot is the entry's most recent fire time; a
process that already handled that slot does nothing; otherwise it claims the slot through
``cogworker_claim_periodic_slot`` (built in: ``periodic-locks``), and only the winner pushes
the job. A push that fails after
a won claim is rolled back so the slot fires on a later tick.

The thread waits for ``ready`` (set by the poller after its first orphan check really read
the in-progress registry): after a fleet-wide outage, recovery must requeue an interrupted
``until_executed`` run and re-take its lock before any ticker may claim the next slot.

Catch-up (``periodic_catch_up``): on (default), the most recent due slot fires at once when
a process starts and no process fired it yet, also on the very first start against a broker
that never saw the entry. Off: on this ticker's first look at an entry, ``last_slot`` is
primed (``broker.periodic.prime_last_slot``); when that created it the slot is not fired
(it becomes the baseline); otherwise one catch-up run happens as with catch-up on. Missed
slots in between are never replayed, only the most recent one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from cogworker.core.errors import BrokerUnavailableError, ConfigurationError, PluginError
from cogworker.core.outage import OutageLog
from cogworker.core.payload import new_jid
from cogworker.core.periodic_types import ClaimOutcome, PeriodicEntry
from cogworker.periodic.cron import previous_fire
from cogworker.periodic.firing import PendingRollbacks, backoff_delay, enqueue_slot, slot_time
from cogworker.periodic.next_wake import seconds_until_next_slot
from cogworker.periodic.registration import all_entries, replaces_schedule
from cogworker.worker.contracts import ManagerControls
from cogworker.worker.threads import stop_thread

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.periodic")

TICK_INTERVAL: Final = 5.0
BLOCKED_GRACE: Final = 15.0  # three heartbeats: a release deferred by an outage can land
READY_POLL: Final = 0.25
THREAD_JOIN_TIMEOUT: Final = 2.0
SITE: Final = "cron ticker"


def configured_tick_interval(app: App) -> float:
    """``plugin_options.periodic.tick_interval`` (seconds, > 0), else 5 s: the longest
    the ticker sleeps (it wakes earlier for each entry's next slot)."""
    value = app.settings.plugin_options.get("periodic", {}).get("tick_interval", TICK_INTERVAL)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigurationError("plugin_options.periodic.tick_interval", value,
                                 "a number of seconds greater than 0")
    return float(value)


@dataclass(slots=True)
class _EntryState:
    handled_slot: int | None = None
    blocked_slot: int | None = None
    blocked_since: float = 0.0
    primed: bool = False
    failures: int = 0
    retry_at: float = 0.0


class Ticker:
    """Fires the app's cron entries from one process (see the module docstring).

    The constructor reads the entries (code entries, then config-file entries) and raises
    :class:`~cogworker.core.errors.PeriodicEntryError` for an invalid config-file entry, so
    build it before the process starts its other threads. :meth:`start` publishes the
    schedule and starts the thread; :meth:`stop` ends it.
    """

    def __init__(
        self,
        app: App,
        manager: ManagerControls,
        outages: OutageLog,
        ready: threading.Event,
        *,
        tick_interval: float | None = None,
        blocked_grace: float = BLOCKED_GRACE,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        entries: Sequence[PeriodicEntry] | None = None,
    ) -> None:
        self.app = app
        self._manager = manager
        self._outages = outages
        self._ready = ready
        if tick_interval is None:
            tick_interval = configured_tick_interval(app)
        self.tick_interval = tick_interval
        self._blocked_grace = blocked_grace
        self._clock = clock
        self._monotonic = monotonic
        self.entries: list[PeriodicEntry] = list(all_entries(app) if entries is None else entries)
        self._states: dict[str, _EntryState] = {}
        self.rollbacks = PendingRollbacks(app, outages, monotonic)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # start and stop ------------------------------------------------------------------------
    def start(self) -> None:
        """Publish the schedule (a failure is logged, never fatal) and start the thread."""
        if self._thread is not None:
            return
        entries = self.entries
        if not entries:
            logger.debug("no cron entries: the ticker does not start")
            return
        self._warn_unknown_jobs(entries)
        try:
            self.app.broker.periodic.publish(entries, replace=replaces_schedule(self.app))
        except Exception as exc:
            self._outages.report("publish cron schedule", exc)
        self._thread = threading.Thread(target=self._run, name="cogworker-ticker", daemon=True)
        self._thread.start()

    def stop(self, join_timeout: float = THREAD_JOIN_TIMEOUT) -> None:
        """Ask the thread to end and wait up to ``join_timeout`` s (it holds no job)."""
        stop_thread(self._stopping, self._thread, join_timeout)

    def _warn_unknown_jobs(self, entries: Sequence[PeriodicEntry]) -> None:
        for entry in entries:
            if entry.job_name not in self.app.registry:
                logger.warning("cron entry %r names job %r, which this process does not know; "
                               "it is still enqueued (another process may run it)",
                               entry.cron, entry.job_name)

    def _run(self) -> None:
        while not self._ready.wait(READY_POLL):
            if self._stopping.is_set():
                return
        while not self._stopping.is_set():
            if self._manager.is_quiet:
                logger.debug("quiet: cron entries are not fired")
            else:
                try:
                    self.tick()
                except Exception:  # a bug in one tick must not end the ticker
                    logger.exception("cron tick failed; next tick in %.0f s", self.tick_interval)
            if self._stopping.wait(seconds_until_next_slot(self.entries, self._clock(),
                                                           self.tick_interval)):
                return

    # one tick ------------------------------------------------------------------------------
    def tick(self) -> None:
        """Retry pending rollbacks, then look at each entry (each one isolated)."""
        self.rollbacks.retry_due()
        now = self._clock()
        for entry in self.entries:
            if self._stopping.is_set():
                return
            state = self._states.setdefault(entry.pjid, _EntryState())
            if self._monotonic() < state.retry_at or self.rollbacks.blocks(entry.pjid):
                continue
            try:
                self._tick_entry(entry, state, now)
            except BrokerUnavailableError as exc:
                self._outages.report(SITE, exc)  # no back-off: retry on the next tick
            except Exception as exc:
                state.failures += 1
                delay = backoff_delay(state.failures)
                state.retry_at = self._monotonic() + delay
                logger.error("cron %s (%s): %s: %s; backing off %.0f s", entry.job_name,
                             entry.pjid[:12], type(exc).__name__, exc, delay, exc_info=exc)
            else:
                state.failures = 0
                self._outages.recovered(SITE)

    def _tick_entry(self, entry: PeriodicEntry, state: _EntryState, now: float) -> None:
        slot = previous_fire(entry, now)
        if slot == state.handled_slot:
            return
        if self.app.broker.periodic.is_disabled(entry.pjid):
            state.handled_slot = slot
            return
        if not self.app.settings.periodic_catch_up and not state.primed:
            created = self.app.broker.periodic.prime_last_slot(entry.pjid, slot)
            state.primed = True
            if created:
                logger.info("cron %s (%s): first start with catch-up off; slot %s is the "
                            "baseline and does not fire", entry.job_name, entry.pjid[:12],
                            slot_time(slot))
                state.handled_slot = slot
                return
        jid = new_jid()
        result = self.app.hooks.claim_periodic_slot(self.app, entry, slot, jid)
        if result is None:
            raise PluginError(
                "no active plugin claims cron slots (cogworker_claim_periodic_slot): activate "
                "periodic-locks (the default) or a replacement, or remove the cron entries"
            )
        if result.outcome is ClaimOutcome.BLOCKED and not self._blocked_too_long(
            entry, state, slot
        ):
            return
        if result.outcome is ClaimOutcome.WON:
            pushed = enqueue_slot(self.app, entry, slot, jid, result.previous_slot,
                                  self.rollbacks)
            if pushed is not None:
                self.app.hooks.periodic_fired(self.app, entry, slot, now - slot)
        state.handled_slot = slot

    def _blocked_too_long(self, entry: PeriodicEntry, state: _EntryState, slot: int) -> bool:
        """Blocked: retry the same slot until ``blocked_grace`` passed, then skip it."""
        now = self._monotonic()
        if state.blocked_slot != slot:
            state.blocked_slot, state.blocked_since = slot, now
        if now - state.blocked_since < self._blocked_grace:
            return False
        logger.info("cron %s (%s): slot %s skipped: the previous until_executed run still "
                    "holds the running lock", entry.job_name, entry.pjid[:12], slot_time(slot))
        return True
