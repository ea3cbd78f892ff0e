"""Health checks for orchestrators: has a worker process beaten recently enough?

A worker writes its presence record every ``heartbeat_interval`` seconds (the record lives
``heartbeat_ttl`` seconds). A process is **live** when its last beat is at most
:data:`ALLOWED_INTERVALS` intervals old: a beat is written every interval, so a healthy
process is never older than one interval plus the write; the second interval tolerates one
late beat (a loaded host, a slow broker) without a probe killing a working process.

The age of a beat is read on the broker's clock, never on this host's, so a probe on another
host agrees with the fleet: from the last-beat stamp when the process holds jobs (the
reliable fetcher), else from the presence record's remaining time to live
(``heartbeat_ttl - expires_in``; on Redis that time is kept in whole seconds, so the age may
read up to a second young).

A process is **ready** when it is live, has started fetching (its record says
``ready``; a process still starting, or draining at shutdown, is not), is not quiet, and the
broker answers a ping now.

Three ways to name what to check: one identity, a pidfile (the pid of a worker or of a
supervisor, whose children are checked), or every process registered from this host.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, Literal

from cogworker.api._source import Source, resolve_broker
from cogworker.core.broker import Broker, ProcessRecord
from cogworker.core.settings import Settings

__all__ = ["ALLOWED_INTERVALS", "HealthReport", "ProcessHealth", "beat_age", "check_host",
           "check_identity", "check_pidfile", "newest_per_pid", "pid_is_running",
           "read_pidfile", "this_host"]

ALLOWED_INTERVALS: Final = 2.0
"""How many heartbeat intervals old a beat may be before its process counts as not live."""

Check = Literal["liveness", "readiness"]


@dataclass(frozen=True, slots=True)
class ProcessHealth:
    """One process's verdict. ``beat_age`` and ``allowed`` are seconds (``beat_age`` None:
    unknown); ``reason`` is one line, also when healthy."""

    identity: str
    pid: int | None
    healthy: bool
    beat_age: float | None
    allowed: float
    ready: bool
    reason: str


@dataclass(frozen=True, slots=True)
class HealthReport:
    """The verdict on what was asked: ``healthy`` when every process checked is (and at least
    one was found); ``reason`` is the one line a probe prints."""

    check: Check
    target: str
    healthy: bool
    reason: str
    processes: tuple[ProcessHealth, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "target": self.target, "healthy": self.healthy,
                "reason": self.reason,
                "processes": [asdict(process) for process in self.processes]}


def this_host() -> str:
    """The host name a worker of this host registers under (``DYNO`` first, as a worker's
    identity does)."""
    return os.environ.get("DYNO") or socket.gethostname()


# -- the three ways to ask -------------------------------------------------------------------
def check_identity(source: Source, settings: Settings, identity: str, *,
                   readiness: bool = False) -> HealthReport:
    """The verdict on the process ``identity``."""
    broker = resolve_broker(source)
    check: Check = "readiness" if readiness else "liveness"
    record = broker.processes.get(identity)
    if record is None:
        return HealthReport(check, identity, False, _no_presence(identity, settings))
    return _verdict(broker, settings, check, identity, [record])


def check_host(source: Source, settings: Settings, host: str | None = None, *,
               readiness: bool = False) -> HealthReport:
    """The verdict on every process registered from ``host`` (default: this host)."""
    broker = resolve_broker(source)
    host = host or this_host()
    check: Check = "readiness" if readiness else "liveness"
    records = newest_per_pid([record for record in broker.processes.live()
                              if record.info.get("hostname") == host])
    if not records:
        return HealthReport(check, f"host {host}", False,
                            f"no process registered on host {host} (none started, or every "
                            f"one stopped beating more than its heartbeat_ttl ago)")
    return _verdict(broker, settings, check, f"host {host}", records)


def check_pidfile(source: Source, settings: Settings, path: Path, *,
                  readiness: bool = False) -> HealthReport:
    """The verdict on the process a pidfile names: a worker, or a supervisor (``run -P``),
    whose children are then checked. The pid must be running on this host."""
    check: Check = "readiness" if readiness else "liveness"
    target = f"pidfile {path}"
    pid, problem = read_pidfile(path)
    if pid is None:
        return HealthReport(check, target, False, problem)
    if not pid_is_running(pid):
        return HealthReport(check, target, False,
                            f"pidfile {path} names pid {pid}, which is not running")
    broker = resolve_broker(source)
    host = this_host()
    records = newest_per_pid([record for record in broker.processes.live()
                              if _is_pid(record, host, pid)])
    if not records:
        return HealthReport(check, target, False,
                            f"pid {pid} (from {path}) runs, but no process of it is registered "
                            f"on host {host}: still starting, or it stopped beating more than "
                            f"its heartbeat_ttl ago")
    return _verdict(broker, settings, check, target, records)


# -- pidfiles ---------------------------------------------------------------------------------
def read_pidfile(path: Path) -> tuple[int | None, str]:
    """The pid a pidfile holds, or None and why not."""
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except FileNotFoundError:
        return None, (f"pidfile {path} does not exist (the worker has not started, or it "
                      f"exited cleanly; start it with --pidfile {path})")
    except OSError as exc:
        return None, f"cannot read pidfile {path}: {exc.strerror or exc}"
    if not text.isdigit() or int(text) <= 0:
        return None, f"pidfile {path} holds {text[:40]!r}, not a process id"
    return int(text), ""


def pid_is_running(pid: int) -> bool:
    """Whether ``pid`` exists on this host and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True  # no /proc (not Linux): kill(0) is all we can know
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def newest_per_pid(records: Iterable[ProcessRecord]) -> list[ProcessRecord]:
    """Of the records one host has for one pid, only the newest (by ``started_at``): a pid
    is one process at a time, so the older ones are dead processes whose records have not
    expired yet (a restarted container's worker gets the same small pid again)."""
    newest: dict[object, ProcessRecord] = {}
    for record in records:
        pid = record.info.get("pid")
        key = (record.info.get("hostname"), pid) if isinstance(pid, int) else record.identity
        kept = newest.get(key)
        if kept is None or _started_at(record) > _started_at(kept):
            newest[key] = record
    return sorted(newest.values(), key=lambda record: record.identity)


def _started_at(record: ProcessRecord) -> float:
    return _number(record.info, "started_at", 0.0)


def _is_pid(record: ProcessRecord, host: str, pid: int) -> bool:
    """``record`` is process ``pid`` of ``host``, or a child of the supervisor ``pid``
    (a supervisor's identity is ``<host>:<pid>:<suffix>``)."""
    if record.info.get("hostname") != host:
        return False
    if record.info.get("pid") == pid:
        return True
    supervisor = record.info.get("supervisor")
    if not isinstance(supervisor, str):
        return False
    parts = supervisor.rsplit(":", 2)
    return len(parts) == 3 and parts[0] == host and parts[1] == str(pid)


# -- judging records --------------------------------------------------------------------------
def _verdict(broker: Broker, settings: Settings, check: Check, target: str,
             records: Iterable[ProcessRecord]) -> HealthReport:
    records = list(records)
    now = broker.server_time() if any(r.last_beat is not None for r in records) else None
    judged = tuple(_judge(record, settings, now) for record in records)
    if check == "readiness":
        if not broker.ping():
            return HealthReport(check, target, False,
                                f"the broker ({broker.describe()}) does not answer", judged)
        failing = [process for process in judged if not process.ready]
    else:
        failing = [process for process in judged if not process.healthy]
    if failing:
        reason = failing[0].reason
        if len(judged) > 1:
            reason = f"{reason} ({len(failing)} of {len(judged)} processes failing)"
        return HealthReport(check, target, False, reason, judged)
    ages = [process.beat_age for process in judged if process.beat_age is not None]
    oldest = f"; oldest beat {max(ages):.1f}s ago" if ages else ""
    state = "ready" if check == "readiness" else "live"
    return HealthReport(check, target, True,
                        f"ok: {len(judged)} process(es) of {target} {state}{oldest}", judged)


def _judge(record: ProcessRecord, settings: Settings, now: float | None) -> ProcessHealth:
    interval = _number(record.info, "heartbeat_interval", settings.heartbeat_interval)
    ttl = _number(record.info, "heartbeat_ttl", settings.heartbeat_ttl)
    allowed = ALLOWED_INTERVALS * interval
    age = beat_age(record, ttl, now)
    pid = record.info.get("pid")
    pid = pid if isinstance(pid, int) and not isinstance(pid, bool) else None
    name = record.identity
    if age is None:
        live, reason = True, f"{name}: registered, beat age unknown"
    elif age > allowed:
        live, reason = False, (f"{name}: last beat {age:.1f}s ago, allowed {allowed:g}s "
                               f"({ALLOWED_INTERVALS:g} x heartbeat_interval {interval:g}s)")
    else:
        live, reason = True, f"{name}: last beat {age:.1f}s ago, allowed {allowed:g}s"
    ready = live and record.info.get("ready", True) is True and not record.quiet
    if live and not ready:
        reason = (f"{name}: quiet (fetching nothing)" if record.quiet
                  else f"{name}: not fetching yet (starting, or stopping)")
    return ProcessHealth(name, pid, live, age, allowed, ready, reason)


def beat_age(record: ProcessRecord, ttl: float, now: float | None) -> float | None:
    """Seconds since ``record``'s last beat on the broker's clock, None when unknown."""
    if record.last_beat is not None and now is not None:
        return max(now - record.last_beat, 0.0)
    if record.expires_in is not None:
        return max(ttl - record.expires_in, 0.0)
    return None


def _no_presence(identity: str, settings: Settings) -> str:
    return (f"process {identity} has no presence record: it stopped, or its last beat is "
            f"older than its heartbeat_ttl (here {settings.heartbeat_ttl:g}s)")


def _number(info: Mapping[str, Any], name: str, default: float) -> float:
    value = info.get(name)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return default
