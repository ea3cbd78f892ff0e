"""What the ``unique`` plugin keeps per app: its options and the releases still owed.

A release that failed because Redis was away is remembered here (lock name and owner jid)
and retried on every heartbeat and once more at shutdown; success, or finding the lock no
longer ours, forgets it. Memory only: a process that exits with releases still owed logs
them, and those locks fall back to their TTL.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cogworker.core.errors import BrokerUnavailableError, ConfigurationError
from cogworker.core.settings import checked_like
from cogworker.core.value_record import ValueRecord

if TYPE_CHECKING:
    from cogworker.core.broker import LockStore
    from cogworker.core.plugin_host import PluginHost, PluginHostBase

logger = logging.getLogger("cogworker.unique")

PLUGIN_NAME = "unique"
EXTRAS_KEY = "unique"
DEFAULT_ORPHAN_REPORT_INTERVAL = 3600.0
OPTION_NAMES = ("lock_ttl", "orphan_report_interval")
LOCK_TTL_ALIAS = "unique_lock_ttl"


class UniqueOptions(ValueRecord):
    """``plugin_options["unique"]``.

    ``orphan_report_interval``: seconds between two orphaned-lock reports of one process
    (0 turns the report off). ``lock_ttl`` (alias: the top-level ``unique_lock_ttl``) is
    checked here and read by :func:`lock_ttl`.
    """

    _fields = ("orphan_report_interval",)
    __slots__ = _fields
    orphan_report_interval: float

    def __init__(self, orphan_report_interval: float = DEFAULT_ORPHAN_REPORT_INTERVAL) -> None:
        super().__init__(orphan_report_interval)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], source: str | None = None) -> UniqueOptions:
        """Read the options; an unknown name or a bad value is a ConfigurationError."""
        unknown = sorted(set(raw) - set(OPTION_NAMES))
        if unknown:
            raise ConfigurationError(
                f"plugin_options.unique.{unknown[0]}", raw[unknown[0]],
                f"a known option of the unique plugin: {', '.join(OPTION_NAMES)}", source,
            )
        if "lock_ttl" in raw:
            checked_like(LOCK_TTL_ALIAS, raw["lock_ttl"], "plugin_options.unique.lock_ttl",
                         source)
        interval = raw.get("orphan_report_interval", DEFAULT_ORPHAN_REPORT_INTERVAL)
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval < 0:
            raise ConfigurationError(
                "plugin_options.unique.orphan_report_interval", interval,
                "a number of seconds >= 0 (0 turns the orphaned-lock report off)",
            )
        return cls(orphan_report_interval=float(interval))


class DeferredReleases:
    """Releases owed to Redis: (lock name, owner jid) → when the first attempt failed."""

    def __init__(self) -> None:
        self._owed: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def remember(self, key: str, owner: str) -> None:
        with self._lock:
            self._owed.setdefault((key, owner), time.time())

    def forget(self, key: str, owner: str) -> None:
        with self._lock:
            self._owed.pop((key, owner), None)

    def owed(self) -> list[tuple[str, str]]:
        """The (key, owner) pairs still owed, oldest first."""
        with self._lock:
            return sorted(self._owed, key=self._owed.__getitem__)

    def __len__(self) -> int:
        with self._lock:
            return len(self._owed)

    def retry(self, locks: LockStore) -> int:
        """Try every owed release once; returns how many are settled.

        Redis still away stops the pass (all kept for next time). Any other error drops
        that entry with one log line; released or no longer ours forgets it.
        """
        settled = 0
        for key, owner in self.owed():
            try:
                released = locks.release(key, owner)
            except BrokerUnavailableError:
                break
            except Exception as exc:
                self.forget(key, owner)
                logger.error("gave up the deferred release of unique lock %s (jid=%s): %s: %s;"
                             " it expires by its TTL, or clear it with `cogworker locks clear`",
                             key, owner, type(exc).__name__, exc)
                continue
            self.forget(key, owner)
            settled += 1
            if released:
                logger.info("released unique lock %s (jid=%s) now that Redis is back",
                            key, owner)
        return settled


class OrphanReportClock:
    """When this process next reports orphaned locks: a random first time, then regularly.

    The random first time keeps a fleet that restarts together from scanning together.
    """

    __slots__ = ("interval", "next_due", "running")

    def __init__(self, interval: float, next_due: float | None = None) -> None:
        self.interval = interval
        self.next_due = next_due
        self.running = threading.Event()

    def __repr__(self) -> str:
        return f"OrphanReportClock(interval={self.interval!r}, next_due={self.next_due!r})"

    def take_turn(self, now: float) -> bool:
        """True when a report is due now (and none is running); schedules the next one."""
        if self.interval <= 0 or self.running.is_set():
            return False
        if self.next_due is None:
            self.next_due = now + random.uniform(0.0, self.interval)
        if now < self.next_due:
            return False
        self.next_due = now + self.interval
        self.running.set()
        return True


class UniqueState:
    """Everything the plugin keeps for one app, in ``app.extras["unique"]``."""

    __slots__ = ("deferred", "options", "orphan_clock")

    def __init__(self, options: UniqueOptions) -> None:
        self.options = options
        self.deferred = DeferredReleases()
        self.orphan_clock = OrphanReportClock(options.orphan_report_interval)


_state_lock = threading.Lock()


def lock_ttl(app: PluginHostBase) -> float:
    """Seconds a push lock lives (and outlives a retry wait): ``plugin_options.unique.
    lock_ttl``, else the top-level alias ``unique_lock_ttl`` (checked at configure)."""
    given = app.settings.plugin_options.get(PLUGIN_NAME, {})
    return float(given["lock_ttl"]) if "lock_ttl" in given else app.settings.unique_lock_ttl


def configure_state(app: PluginHost) -> UniqueState:
    """Parse the options into the app's state; owed releases survive a reconfigure."""
    options = UniqueOptions.parse(app.settings.plugin_options.get(PLUGIN_NAME, {}),
                                  app.settings.sources.get("plugin_options"))
    with _state_lock:
        previous = app.extras.get(EXTRAS_KEY)
        state = UniqueState(options)
        if isinstance(previous, UniqueState):
            state.deferred = previous.deferred
        app.extras[EXTRAS_KEY] = state
        return state


def state_of(app: PluginHost) -> UniqueState:
    """The app's state, made with default options if ``cogworker_configure`` never ran."""
    state = app.extras.get(EXTRAS_KEY)
    if isinstance(state, UniqueState):
        return state
    with _state_lock:
        state = app.extras.get(EXTRAS_KEY)
        if not isinstance(state, UniqueState):
            state = UniqueState(UniqueOptions())
            app.extras[EXTRAS_KEY] = state
        return state


def release(app: PluginHost, key: str, owner: str, reason: str) -> bool:
    """Release lock ``key`` (a name) if ``owner`` holds it; owe it when Redis is away. True
    if deleted.

    Other errors are logged (the lock then falls back to its TTL); nothing is raised.
    """
    try:
        return app.broker.locks.release(key, owner)
    except BrokerUnavailableError as exc:
        state_of(app).deferred.remember(key, owner)
        logger.warning("could not release unique lock %s of jid=%s (%s): Redis unavailable "
                       "(%s); retrying on the next heartbeats", key, owner, reason, exc)
    except Exception as exc:
        logger.error("could not release unique lock %s of jid=%s (%s): %s: %s; it expires by "
                     "its TTL, or clear it with `cogworker locks clear`", key, owner, reason,
                     type(exc).__name__, exc)
    return False
