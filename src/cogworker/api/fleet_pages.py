"""The fleet a page at a time: live processes with their beat age and in-flight jobs.

Each process's record is small (its heartbeat fields), so the fleet's totals and the
filtering and sorting of processes read every record once per request
(``broker.processes.live``). In-flight jobs are read only for the processes on the page,
and shown up to a cap per card.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from cogworker.api._source import Source, resolve_broker
from cogworker.api.job_rows import JobRow
from cogworker.api.job_sources import running_rows
from cogworker.api.processes import Process, ProcessSet

ProcessSort = Literal["identity", "busy", "started", "memory"]
PROCESS_SORTS: tuple[ProcessSort, ...] = ("identity", "busy", "started", "memory")
DEFAULT_HEARTBEAT_TTL = 20.0  # the heartbeat_ttl setting's default


@dataclass(frozen=True)
class FleetSummary:
    """The whole fleet in four numbers."""

    processes: int
    threads: int
    busy: int
    quiet: int

    @property
    def active(self) -> int:
        return self.processes - self.quiet


@dataclass(frozen=True)
class ProcessCard:
    """One process as a card shows it: ``beat_age`` in seconds (None: unknown), its
    running jobs (at most the cap asked for) and how many it runs in all."""

    process: Process
    beat_age: float | None
    jobs: list[JobRow]
    running: int


@dataclass(frozen=True)
class ProcessPage:
    cards: list[ProcessCard]
    total: int
    summary: FleetSummary
    offset: int
    limit: int


def _live_processes(source: Source) -> list[Process]:
    return list(ProcessSet(source))


def _summary(processes: list[Process]) -> FleetSummary:
    return FleetSummary(len(processes), sum(p.concurrency or 0 for p in processes),
                        sum(p.busy for p in processes), sum(p.is_quiet for p in processes))


def fleet_summary(source: Source) -> FleetSummary:
    """How many processes are alive, their threads, busy threads and quiet ones."""
    return _summary(_live_processes(source))


_SORT_KEYS: dict[ProcessSort, Callable[[Process], Any]] = {
    "identity": lambda p: p.identity,
    "busy": lambda p: (-p.busy, p.identity),
    "started": lambda p: (-(p.started_at or 0.0), p.identity),
    "memory": lambda p: (-(p.rss_kb or 0), p.identity),
}


def _matches(process: Process, needle: str) -> bool:
    haystack = " ".join([process.identity, *process.queues, process.hostname or ""])
    return needle in haystack.lower()


def _beat_ages(source: Source, processes: list[Process], heartbeat_ttl: float
               ) -> dict[str, float | None]:
    """Seconds since each process's last beat: the broker's clock against its recorded
    beat, else the heartbeat TTL less what its presence record has left."""
    now = resolve_broker(source).server_time()
    ages: dict[str, float | None] = {}
    for process in processes:
        if process.last_beat is not None:
            ages[process.identity] = max(now - process.last_beat, 0.0)
        elif process.expires_in is not None:
            ages[process.identity] = max(heartbeat_ttl - process.expires_in, 0.0)
        else:
            ages[process.identity] = None
    return ages


def process_page(source: Source, *, query: str = "", sort: ProcessSort = "identity",
                 offset: int = 0, limit: int = 20, jobs_per_process: int = 10,
                 heartbeat_ttl: float = DEFAULT_HEARTBEAT_TTL) -> ProcessPage:
    """The processes matching ``query`` (identity, hostname or a queue name), sorted."""
    processes = _live_processes(source)
    needle = query.strip().lower()
    chosen = [p for p in processes if not needle or _matches(p, needle)]
    chosen.sort(key=_SORT_KEYS[sort])
    offset, limit = max(offset, 0), max(limit, 1)
    page = chosen[offset : offset + limit]
    ages = _beat_ages(source, page, heartbeat_ttl) if page else {}
    broker = resolve_broker(source)
    cards = []
    for process in page:
        jobs = running_rows(broker, process.identity)
        cards.append(ProcessCard(process, ages.get(process.identity), jobs[:jobs_per_process],
                                 len(jobs)))
    return ProcessPage(cards, len(chosen), _summary(processes), offset, limit)


def signal_fleet(source: Source, signal: Literal["quiet", "resume"]) -> int:
    """Ask every live process to go quiet (stop taking jobs) or resume; how many were asked."""
    processes = _live_processes(source)
    for process in processes:
        if signal == "quiet":
            process.quiet()
        else:
            process.resume()
    return len(processes)
