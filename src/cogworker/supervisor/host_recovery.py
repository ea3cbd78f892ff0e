"""At start-up, put back the jobs of this host's processes that are certainly dead.

A process that starts looks at the live process records (a record outlives its process by
up to ``heartbeat_ttl``). One of them is on this very host when it names the same host
name **and** the same boot id (:mod:`.lineage`); its pid can then be asked about here. It
is certainly dead when that pid is gone, or belongs to a process younger than the record
(the kernel gave the pid to someone else). Its held jobs are then recovered at once
through the fetch strategy, instead of after the orphan threshold, and its record removed.

Limits: a record without a boot id (an older version, a system without one) is never
judged here; neither is a process whose record already expired (the orphan check takes
it). Two live containers that share a kernel *and* a host name but not a pid namespace
would look like one host: give containers their own host names (the default everywhere).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from cogworker.core.broker import Fetcher, RecoveryOptions
from cogworker.supervisor import lineage
from cogworker.supervisor.recovery import forget

if TYPE_CHECKING:
    from cogworker.app import App

logger = logging.getLogger("cogworker.supervisor")

START_TOLERANCE: Final = 2.0
"""Seconds by which a pid's start may follow the record's ``started_at`` and still be the
same process (the boot time is whole seconds; ``started_at`` is taken after start-up)."""
_PROC: Final = Path("/proc")
_STARTTIME_FIELD: Final = 19  # field 22 of /proc/<pid>/stat, counted after the ")"


def boot_time(proc: Path = _PROC) -> float | None:
    """The epoch second the system booted (``btime`` of ``/proc/stat``), None if unknown."""
    try:
        for line in (proc / "stat").read_text(encoding="ascii").splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def process_start(pid: int, proc: Path = _PROC) -> float | None:
    """When process ``pid`` started (epoch seconds), None when unknown or gone."""
    booted = boot_time(proc)
    try:
        stat = (proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
        ticks = int(stat.rsplit(")", 1)[1].split()[_STARTTIME_FIELD])
    except (OSError, ValueError, IndexError):
        return None
    if booted is None:
        return None
    return booted + ticks / os.sysconf("SC_CLK_TCK")


def certainly_dead(pid: int, started_at: float, proc: Path = _PROC) -> bool:
    """Whether the process that reported ``pid`` and ``started_at`` on this host is gone:
    the pid is unused, ours, or held by a process that started after it."""
    if pid == os.getpid():
        return True  # its pid is this (newer) process's now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # exists, another user's: its start time decides
    started = process_start(pid, proc)
    return started is not None and started > started_at + START_TOLERANCE


def is_neighbour(info: Mapping[str, Any], host: str, boot: str) -> bool:
    """Whether a process record names this host (host name and boot id)."""
    return info.get("hostname") == host and info.get("boot_id") == boot


def dead_neighbours(app: App, own_identity: str) -> list[str]:
    """Identities of this host's recorded processes that are certainly dead."""
    from cogworker.worker.heartbeat import hostname

    boot = lineage.boot_id()
    if boot is None:
        return []
    found = []
    for record in app.broker.processes.live():
        info = record.info
        pid, started_at = info.get("pid"), info.get("started_at")
        if (record.identity != own_identity and is_neighbour(info, hostname(), boot)
                and isinstance(pid, int) and isinstance(started_at, int | float)
                and certainly_dead(pid, float(started_at))):
            found.append(record.identity)
    return found


def recover_dead_neighbours(app: App, fetcher: Fetcher, own_identity: str) -> list[str]:
    """Recover the held jobs of this host's dead processes; returns their identities.

    Never raises: a failure is logged, and the orphan check remains the backstop."""
    try:
        dead = dead_neighbours(app, own_identity)
    except Exception as exc:
        logger.warning("start-up recovery skipped: the process list could not be read "
                       "(%s: %s); the orphan check will find dead processes", type(exc).__name__,
                       exc)
        return []
    settings = app.settings
    options = RecoveryOptions(settings.orphan_threshold, settings.max_orphanings)
    for identity in dead:
        report = fetcher.recover_process(identity, options)
        logger.warning("start-up recovery: process %s on this host is dead (its pid is gone "
                       "or reused); put back %d job(s) it left in progress", identity,
                       report.moved)
        if report.moved:
            app.hooks.orphans_recovered(app, identity, report.moved,
                                        report.requeued_jobs(identity))
        if not (report.failures or report.connection_lost or report.failed):
            forget(app, identity)
    return dead

