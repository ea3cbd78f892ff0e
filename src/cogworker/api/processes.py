"""Live worker processes (their heartbeat records), remote control, and in-flight jobs."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cogworker.api._source import Source, resolve_broker
from cogworker.core.broker import SIGNALS, ProcessRecord, ProcessRegistry, WorkRecord

logger = logging.getLogger(__name__)

__all__ = ["SIGNALS", "Process", "ProcessSet", "Work", "WorkSet", "by_supervisor"]

T = TypeVar("T")


@dataclass(frozen=True)
class Process:
    """One live process as its last heartbeat described it.

    ``info`` holds everything the process reported (``hostname``, ``pid``, ``concurrency``,
    ``queues``, ``started_at``, ``rss_kb``, ``boot_id``, ``supervisor``);
    ``process["pid"]`` reads from it too.
    ``is_quiet`` is the state it reported; :meth:`quiet` asks it to become quiet.
    ``last_beat`` is its last beat on the broker's clock when it holds jobs (else None);
    ``expires_in`` the seconds its presence record has left (None: unknown).
    """

    identity: str
    info: dict[str, Any]
    busy: int
    is_quiet: bool
    registry: ProcessRegistry = field(repr=False, compare=False)
    last_beat: float | None = field(default=None, compare=False)
    expires_in: float | None = field(default=None, compare=False)

    @classmethod
    def from_record(cls, record: ProcessRecord, registry: ProcessRegistry) -> Process:
        return cls(record.identity, dict(record.info), record.busy, record.quiet, registry,
                   record.last_beat, record.expires_in)

    def __getitem__(self, name: str) -> Any:
        if name == "identity":
            return self.identity
        if name == "busy":
            return self.busy
        if name == "quiet":
            return self.is_quiet
        return self.info[name]

    def _typed(self, name: str, kind: type[T]) -> T | None:
        value = self.info.get(name)
        return value if isinstance(value, kind) and not isinstance(value, bool) else None

    @property
    def hostname(self) -> str | None:
        return self._typed("hostname", str)

    @property
    def pid(self) -> int | None:
        return self._typed("pid", int)

    @property
    def concurrency(self) -> int | None:
        return self._typed("concurrency", int)

    @property
    def queues(self) -> list[str]:
        queues = self.info.get("queues")
        return [str(queue) for queue in queues] if isinstance(queues, list) else []

    @property
    def started_at(self) -> float | None:
        value = self._typed("started_at", float) or self._typed("started_at", int)
        return float(value) if value is not None else None

    @property
    def rss_kb(self) -> int | None:
        return self._typed("rss_kb", int)

    @property
    def supervisor(self) -> str | None:
        """The identity of the supervisor (``cogworker run -P``) that started this process,
        None for a process started on its own."""
        return self._typed("supervisor", str)

    def quiet(self) -> int:
        """Ask the process to stop taking new jobs; returns how many listeners got it.

        Nothing is kept: a process that is not listening right now never sees it.
        """
        return self.registry.signal(self.identity, "quiet")

    def resume(self) -> int:
        """Ask a quiet process to take jobs again."""
        return self.registry.signal(self.identity, "resume")

    def stop(self) -> int:
        """Ask the process to finish its jobs (up to its shutdown timeout) and exit."""
        return self.registry.signal(self.identity, "stop")

    def to_dict(self) -> dict[str, Any]:
        return {**self.info, "identity": self.identity, "busy": self.busy,
                "quiet": self.is_quiet}


class ProcessSet:
    """The live processes (whose presence record still exists)."""

    def __init__(self, source: Source) -> None:
        self._registry = resolve_broker(source).processes

    def __iter__(self) -> Iterator[Process]:
        for record in self._registry.live():
            yield Process.from_record(record, self._registry)

    def size(self) -> int:
        """How many processes are alive."""
        return sum(1 for _ in self)

    def get(self, identity: str) -> Process | None:
        """The live process with this identity, or None."""
        record = self._registry.get(identity)
        return None if record is None else Process.from_record(record, self._registry)

    def total_concurrency(self) -> int:
        """Processor threads over every live process."""
        return sum(process.concurrency or 0 for process in self)


def by_supervisor(processes: Iterable[Process]) -> list[Process]:
    """``processes`` with the children of one supervisor together (ordered by supervisor,
    then identity); a process without a supervisor stands on its own."""
    return sorted(processes, key=lambda process: (process.supervisor or process.identity,
                                                  process.identity))


@dataclass(frozen=True)
class Work:
    """A job some processor thread is running: its queue, start time and payload."""

    queue: str
    run_at: float
    job: dict[str, Any]

    @classmethod
    def from_record(cls, record: WorkRecord) -> Work:
        return cls(record.queue, record.run_at, dict(record.payload))

    def to_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "run_at": self.run_at, "job": self.job}


class WorkSet:
    """Jobs running right now on live processes: ``(identity, thread_id, Work)``."""

    def __init__(self, source: Source) -> None:
        self._registry = resolve_broker(source).processes

    def __iter__(self) -> Iterator[tuple[str, str, Work]]:
        for running in self._registry.work():
            yield running.identity, running.tid, Work.from_record(running.work)

    def size(self) -> int:
        """How many jobs are running on live processes."""
        return sum(1 for _ in self)
