"""The launcher: starts a worker process's threads in order, watches signals, stops them.

Start order (a process never fetches before it has a presence key):

0. with ``cpu_affinity`` set, every thread pinned to its slot's CPU (a platform that
cannot pin, or a listed CPU the process may not use, is a ``ConfigurationError`` before
anything else starts: :mod:`cogworker.worker.cpu_pinning`); 1. a fresh identity; 2. OS
signal handlers (tokens on a queue); 3. the fetcher (fetch-strategy
hook) and the Manager; 4. the heartbeat, blocking until the first beat succeeds (a stop
token while waiting aborts start-up, a quiet token is applied; a refused password ends
start-up with exit status 1); 5. the ``startup`` hooks, the start-up line and the lines
naming the jobs and cron entries, the Manager's processor threads, the poller; then the
process reads as ready (its presence record says so at once, and systemd hears ``READY=1``
when ``NOTIFY_SOCKET`` is set); 6. the main thread watches tokens until ``stop`` (with
``burst``, also until nothing is left to do).

Stop order: not ready any more (systemd hears ``STOPPING=1``; remote control stops
listening) → Manager (drain up to ``timeout``, requeue what is unfinished) → ``shutdown``
hooks → poller → heartbeat (remote control's thread joined, presence removed) → fetcher
closed. The heartbeat keeps beating during the drain, so the process stays visible (live,
not ready) while jobs finish.
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from cogworker.__about__ import __version__
from cogworker.app import make_identity
from cogworker.core.errors import BrokerAuthenticationError
from cogworker.core.outage import OutageLog
from cogworker.core.payload import Payload, dumps
from cogworker.supervisor import lineage
from cogworker.supervisor.child_plugin import PLUGIN_NAME as PROCESS_PLUGIN_NAME
from cogworker.worker import signals
from cogworker.worker.beat_continuity import BeatContinuity
from cogworker.worker.burst import LOOK_INTERVAL, BurstWatch
from cogworker.worker.cpu_pinning import pin_process, planned_cpu
from cogworker.worker.heartbeat import Heartbeat
from cogworker.worker.manager import Manager
from cogworker.worker.poller import Poller
from cogworker.worker.service_notify import ServiceNotifier
from cogworker.worker.ticker import Ticker

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.core.broker import Fetcher
    from cogworker.core.hooks import Hooks
    from cogworker.core.periodic_types import PeriodicEntry
    from cogworker.core.settings import Settings

logger = logging.getLogger("cogworker.launcher")

WATCH_SLICE: Final = 1.0  # seconds the main thread waits for a token before looking again


class Launcher:
    """One worker process. Implements :class:`cogworker.core.hookspecs.WorkerHandle`."""

    def __init__(self, app: App, tokens: signals.TokenQueue | None = None, *,
                 burst: bool = False) -> None:
        """``tokens``: a queue whose OS signal handlers were installed before the app was
        loaded (``cogworker run`` does this), so a TERM during a slow import still stops.
        ``burst``: stop by itself once there is nothing left to do (see ``worker/burst``)."""
        self.app = app
        self.burst = burst
        self.identity = app.identity
        self.tokens: signals.TokenQueue = tokens if tokens is not None else queue.SimpleQueue()
        self._installs_handlers = tokens is None  # given tokens come with handlers in place
        self.outages = OutageLog()
        self.fetcher: Fetcher | None = None
        self.manager: Manager | None = None
        self.heartbeat: Heartbeat | None = None
        self.poller: Poller | None = None
        self.ticker: Ticker | None = None
        self.notifier = ServiceNotifier.from_environment(supervised=lineage.current() is not None)
        self.started = threading.Event()
        """Set once every thread runs and the start-up line is logged."""

    # WorkerHandle --------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        return self.app.settings

    def performing_jobs(self) -> list[Payload]:
        return self.manager.performing_jobs() if self.manager is not None else []

    # control -------------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Ask the main thread to stop gracefully (what SIGTERM and remote ``stop`` do)."""
        self.tokens.put(signals.STOP)

    def request_quiet(self) -> None:
        """Ask the main thread to stop fetching (what SIGTSTP does)."""
        self.tokens.put(signals.QUIET)

    # run -----------------------------------------------------------------------------------
    def run(self) -> int:
        """Start, serve until a stop is requested, stop. Returns the process exit code."""
        self._pin_to_cpu()
        self.app.identity = self.identity = make_identity()
        installed = (signals.install(self.tokens) if self._installs_handlers
                     else signals.InstalledHandlers())
        try:
            try:
                if not self._start():
                    return 0
            except BrokerAuthenticationError as exc:
                logger.error("Redis at %s refused to authenticate, so the worker does not "
                             "start (retrying cannot fix a password): %s",
                             self.app.redis_location(), exc)
                self._abort_start()
                return 1
            self._watch()
            self._stop()
            return 0
        finally:
            installed.restore()

    def _pin_to_cpu(self) -> None:
        slot = lineage.slot()
        cpu = planned_cpu(self.settings, slot)  # a refusal comes before anything starts
        if cpu is not None:
            # Built first, so a private redis-server it starts (development) is not pinned
            # with the worker. Building starts no thread and fetches nothing.
            self.app.broker  # noqa: B018
            pin_process(cpu, self.settings, slot)

    def _start(self) -> bool:
        fetcher = self.app.hooks.make_fetcher(self.app, self.app.broker)
        self.fetcher = fetcher
        manager = self.manager = Manager(self.app, fetcher, self.outages)
        settings = self.app.settings
        continuity = BeatContinuity(settings.heartbeat_interval, settings.heartbeat_ttl)
        poller = self.poller = Poller(self.app, manager, self.outages, fetcher,
                                      continuity=continuity)
        # Built before the first beat: a bad cron entry fails start-up before any thread runs.
        ticker = self.ticker = Ticker(self.app, manager, self.outages, poller.ready_for_ticker)
        heartbeat = self.heartbeat = Heartbeat(
            self.app, manager, self.outages, fetcher.holds_jobs,
            worker=self, on_stop=self.request_stop, on_beat=self.notifier.watchdog,
            continuity=continuity,
        )
        # A TERM may have come while the app was imported (``cogworker run`` installs the
        # handlers first); quiet tokens are applied here, now that the manager exists.
        if (self._stop_requested_during_startup()
                or not heartbeat.start(abort_if=self._stop_requested_during_startup,
                                       target=self.app.redis_location())):
            logger.info("Received stop signal before startup completed, identity=%s",
                        self.identity)
            self._abort_start()
            return False
        self.app.hooks.startup(self)
        logger.info("%s", self.startup_line())
        logger.info("%s", jobs_line(self.app))
        logger.info("%s", cron_line(ticker.entries))
        manager.start()
        poller.start()
        ticker.start()
        heartbeat.ready = True
        heartbeat.publish_state()  # a readiness probe sees it now, not at the next beat
        self.notifier.ready()
        self.started.set()
        return True

    def _abort_start(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
        self._close_fetcher()

    def _stop_requested_during_startup(self) -> bool:
        while True:
            try:
                token = self.tokens.get_nowait()
            except queue.Empty:
                return False
            if token == signals.STOP:
                return True
            self._apply(token)

    def _watch(self) -> None:
        watch = BurstWatch(self.app, self.manager) if self.burst and self.manager else None
        while True:
            try:
                token = self.tokens.get(timeout=LOOK_INTERVAL if watch else WATCH_SLICE)
            except queue.Empty:
                if watch is not None and watch.finished():
                    logger.info("burst: the queues are empty and nothing is due; stopping, "
                                "identity=%s", self.identity)
                    return
                continue
            if token == signals.STOP:
                logger.info("Received stop signal, identity=%s", self.identity)
                return
            self._apply(token)

    def _apply(self, token: str) -> None:
        if token == signals.QUIET:
            logger.info("Received quiet signal, identity=%s", self.identity)
            if self.manager is not None:
                self.manager.quiet()
            if self.heartbeat is not None:
                self.heartbeat.publish_state()
        elif token == signals.DUMP:
            dump_threads()
        else:
            logger.warning("ignoring unknown control token %r", token)

    # stop ----------------------------------------------------------------------------------
    def _stop(self) -> None:
        """Each step runs even when an earlier one failed. No job starts once it began:
        the processor threads stop taking jobs before anything that may wait (a beat, a
        join)."""
        if self.manager is not None:
            self.manager.stop_intake()
        self.notifier.stopping()
        if self.heartbeat is not None:
            self.heartbeat.ready = False  # draining: live, but not ready
            self.heartbeat.publish_state()
            self.heartbeat.remote.stop_listening()  # its last read ends during the drain
        if self.ticker is not None:
            self.ticker.stop()  # a leaving process claims no new cron slot
        if self.manager is not None:
            try:
                self.manager.stop(self.settings.timeout)
            except Exception:
                logger.exception("stopping the processor threads failed")
        try:
            self.app.hooks.shutdown(self)
        except Exception:
            logger.exception("shutdown hooks failed")
        if self.poller is not None:
            self.poller.stop()
        if self.heartbeat is not None:
            self.heartbeat.stop()
        self._close_fetcher()
        logger.info("stopped, identity=%s", self.identity)

    def _close_fetcher(self) -> None:
        if self.fetcher is None:
            return
        try:
            self.fetcher.close()
        except Exception:
            logger.exception("closing the fetcher failed")

    # reporting -----------------------------------------------------------------------------
    def startup_line(self) -> str:
        settings = self.settings
        fetch = self.fetcher.name if self.fetcher is not None else "?"
        return (
            f"cogworker {__version__} started identity={self.identity} pid={os.getpid()} "
            f"concurrency={settings.concurrency} queues={weighted_queues(settings.queues)} "
            f"fetch={fetch} plugins={','.join(active_plugins(self.app.hooks)) or '-'} "
            f"redis={self.app.broker.describe()}"
        )


def jobs_line(app: App) -> str:
    """The start-up line that names the registered jobs."""
    names = app.registry.app_names()
    line = f"jobs ({len(names)}): {', '.join(names) if names else 'none registered'}"
    plugins_own = sorted(set(app.registry.names()) - set(names))
    return f"{line}; the plugins' own: {', '.join(plugins_own)}" if plugins_own else line


def cron_line(entries: Sequence[PeriodicEntry]) -> str:
    """The start-up line that lists the cron entries: cron, job, queue and pjid prefix."""
    if not entries:
        return "cron entries: none"
    shown = "; ".join(
        f"{entry.cron!r} {entry.job_name}{(' ' + dumps(entry.args)) if entry.args else ''} "
        f"queue={entry.queue} pjid={entry.pjid[:12]}" for entry in entries)
    return f"cron entries ({len(entries)}): {shown}"


def weighted_queues(queues: Sequence[str]) -> str:
    """``("a", "a", "b")`` → ``"a:2,b:1"`` (in order of first appearance)."""
    counts = collections.Counter(queues)
    return ",".join(f"{name}:{counts[name]}" for name in dict.fromkeys(queues))


def active_plugins(hooks: Hooks) -> list[str]:
    """Names of the plugins active in this process, sorted (not the run command's own
    hooks, which every ``cogworker run`` process has)."""
    return sorted(name for name, _plugin in hooks.plugin_manager.list_name_plugin()
                  if name != PROCESS_PLUGIN_NAME)


def dump_threads() -> None:
    """Log the current stack of every thread at WARNING (what SIGTTIN asks for)."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    frames = sys._current_frames()
    logger.warning("thread dump: %d thread(s)", len(frames))
    for ident, frame in frames.items():
        stack = "".join(traceback.format_stack(frame))
        logger.warning("thread %s (ident %d):\n%s", names.get(ident, "?"), ident, stack)
