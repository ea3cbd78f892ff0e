"""The heartbeat: this process's presence record, refreshed every few seconds.

A process beats before it fetches anything (:meth:`Heartbeat.start` blocks until the first
beat succeeds), so a process that holds jobs always has a presence record, and orphan
recovery never mistakes a starting process for a dead one. After that a daemon thread
beats every ``heartbeat_interval`` seconds (``broker.processes.beat``); a failed beat is
reported (collapsed while the broker is away) and never ends the loop. Every beat, good or
failed, is recorded in :class:`~cogworker.worker.beat_continuity.BeatContinuity`, which
tells the orphan check when its own beats broke off; before writing, a beat checks that
the broker still holds the record the last one wrote (lost writes are such a break). The
heartbeat also runs the remote-control subscriber, whose messages are addressed to the
same identity.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from cogworker.__about__ import __version__
from cogworker.core.errors import BrokerAuthenticationError
from cogworker.core.outage import OutageLog
from cogworker.supervisor import lineage
from cogworker.worker.beat_continuity import BeatContinuity
from cogworker.worker.contracts import ManagerControls
from cogworker.worker.remote import RemoteControl
from cogworker.worker.threads import stop_thread

if TYPE_CHECKING:
    from cogworker.app import App
    from cogworker.core.hookspecs import WorkerHandle

logger = logging.getLogger(__name__)

STARTUP_RETRY_INTERVAL: Final = 1.0
THREAD_JOIN_TIMEOUT: Final = 1.0
SITE: Final = "heartbeat"
_STATUS_FILE = Path("/proc/self/status")


def resident_memory_kb(status_file: Path = _STATUS_FILE) -> int | None:
    """This process's resident memory in KiB (``VmRSS``), or None where unknown."""
    try:
        text = status_file.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1])
    return None


def hostname() -> str:
    """``DYNO`` when set (one name per dyno on Heroku-like hosts), else the machine's name."""
    return os.environ.get("DYNO") or socket.gethostname()


class Heartbeat:
    """Beats for ``app.identity`` and listens for remote control on its channel."""

    def __init__(
        self,
        app: App,
        manager: ManagerControls,
        outages: OutageLog,
        holds_jobs: Callable[[], bool],
        *,
        worker: WorkerHandle,
        on_stop: Callable[[], None],
        on_beat: Callable[[], None] | None = None,
        continuity: BeatContinuity | None = None,
    ) -> None:
        """``on_beat``: called after each successful beat (the systemd watchdog ping)."""
        self.app = app
        self.identity = app.identity
        self._manager = manager
        self._outages = outages
        self._holds_jobs = holds_jobs
        self._worker = worker
        self._on_beat = on_beat
        self.ready = False
        """Whether the process fetches (set by the launcher): what a readiness check reads."""
        self._started_at: float | None = None
        self._has_beaten = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._write_lock = threading.Lock()  # one presence write at a time: see publish_state
        settings = app.settings
        self.continuity = continuity or BeatContinuity(settings.heartbeat_interval,
                                                       settings.heartbeat_ttl)
        """Whether beats ran without a break: the orphan check judges others only after
        a settled spell of them."""
        self.last_error: Exception | None = None
        """The error of the last failed beat, None after a successful one."""
        self.remote = RemoteControl(app.broker.processes, self.identity, manager, on_stop,
                                    outages, on_state_change=self.publish_state)

    # start ---------------------------------------------------------------------------------
    def start(self, abort_if: Callable[[], bool], target: str = "the broker") -> bool:
        """Beat until a beat succeeds, then start the beat and remote-control threads.

        Between failed attempts ``abort_if()`` is asked; when it returns True (or
        :meth:`stop` was called) this returns False and nothing has been started. The first
        failure is logged with ``target`` (where the broker URL comes from). A refused
        password is raised (:class:`BrokerAuthenticationError`): retrying cannot fix it.
        """
        waited = False
        while not self.beat():
            if isinstance(self.last_error, BrokerAuthenticationError):
                raise self.last_error
            if not waited:
                waited = True
                logger.warning("waiting for the broker at %s: %s; retrying every %gs, fetching "
                               "nothing meanwhile", target, self.last_error,
                               STARTUP_RETRY_INTERVAL)
            if abort_if() or self._stopping.wait(STARTUP_RETRY_INTERVAL):
                return False
        if self._stopping.is_set():
            return False
        self._thread = threading.Thread(
            target=self._run, name="cogworker-heartbeat", daemon=True
        )
        self._thread.start()
        self.remote.start()
        return True

    @property
    def is_running(self) -> bool:
        """True while the beat thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        interval = self.app.settings.heartbeat_interval
        while not self._stopping.wait(interval):
            self.beat()

    # one beat ------------------------------------------------------------------------------
    def beat(self) -> bool:
        """Write presence once, then run the heartbeat hooks. True when presence was written.

        Never raises: a failure is reported through the outage log.
        """
        settings = self.app.settings
        started = self.continuity.now()
        try:
            self._check_presence_kept()
            self._write_presence()
        except Exception as exc:
            self.last_error = exc
            self.continuity.beat_failed()
            self._outages.report(SITE, exc)
            return False
        self.continuity.beat_succeeded(started)
        self.last_error = None
        self._has_beaten = True
        self._outages.recovered(SITE)
        if self._on_beat is not None:
            self._on_beat()
        self._write_work(settings.heartbeat_ttl)
        self._run_hooks()
        return True

    def _check_presence_kept(self) -> None:
        """Before writing, whether the broker still holds the record the last beat wrote.
        Lost writes (a restart from an older snapshot, a fail-over) leave every process's
        record stale: a break the orphan check waits out (see :mod:`.beat_continuity`)."""
        if not self.continuity.presence_expected():
            return
        if self.app.broker.processes.get(self.identity) is None:
            self.continuity.presence_missing()

    def _write_presence(self) -> None:
        settings = self.app.settings
        with self._write_lock:  # the quiet flag is read under the lock: never a stale one
            self.app.broker.processes.beat(
                self.identity,
                self.info(),
                self._manager.busy,
                self._manager.is_quiet,
                list(dict.fromkeys(settings.queues)),
                ttl=settings.heartbeat_ttl,
                holds_jobs=self._holds_jobs(),
            )

    def publish_state(self) -> None:
        """Write presence now, after a quiet or resume, so `ctl list` shows it at once
        instead of at the next beat. A failure is logged; the next beat writes it anyway."""
        if not self._has_beaten:
            return
        try:
            self._write_presence()
        except Exception as exc:
            self._outages.report(SITE, exc)

    def _write_work(self, ttl: float) -> None:
        """Publish what runs now (the running-work record), like Sidekiq: once a beat, not
        per job."""
        try:
            self.app.broker.processes.replace_work(self.identity,
                                                   self._manager.work_entries(), ttl)
        except Exception as exc:
            self._outages.report("workers-hash", exc)
        else:
            self._outages.recovered("workers-hash")

    def _run_hooks(self) -> None:
        try:
            self.app.hooks.heartbeat(self._worker)
        except Exception:  # the facade isolates plugins; this guards the facade itself
            logger.exception("heartbeat hooks failed for %s; the beat still counts",
                             self.identity)

    def info(self) -> dict[str, Any]:
        """What the presence record says about this process."""
        if self._started_at is None:
            self._started_at = time.time()
        settings = self.app.settings
        return {
            "hostname": hostname(),
            "pid": os.getpid(),
            "concurrency": settings.concurrency,
            "queues": list(settings.queues),
            "started_at": self._started_at,
            "rss_kb": resident_memory_kb(),
            "version": __version__,
            "identity": self.identity,
            # what `cogworker health` judges this record by, whatever the prober's settings
            "heartbeat_interval": settings.heartbeat_interval,
            "heartbeat_ttl": settings.heartbeat_ttl,
            "ready": self.ready,
            **lineage.process_facts(),  # boot_id, supervisor: grouping and start-up recovery
        }

    # stop ----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop both threads (each joined at most 1 s), then remove the presence records.

        A start still waiting for its first beat returns False. Errors removing presence
        are logged: the key expires by itself after ``heartbeat_ttl`` anyway.
        """
        self._stopping.set()
        self.remote.stop(THREAD_JOIN_TIMEOUT)
        stop_thread(self._stopping, self._thread, THREAD_JOIN_TIMEOUT)
        if not self._has_beaten:
            return
        try:
            self.app.broker.processes.remove(self.identity)
        except Exception as exc:
            logger.warning("could not remove the presence of %s (%s: %s); it expires by "
                           "itself within %.0f s", self.identity, type(exc).__name__, exc,
                           self.app.settings.heartbeat_ttl)
