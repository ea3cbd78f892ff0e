"""Live worker processes (their heartbeat records), remote control, and in-flight jobs."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cogworker.api._source import BrokerLike, Source, parse_object, resolve_broker, text
from cogworker.redis.errors import translate_errors

logger = logging.getLogger(__name__)

SIGNALS = ("quiet", "resume", "stop")

T = TypeVar("T")


@dataclass(frozen=True)
class Process:
    """One live process as its last heartbeat described it.

    ``info`` holds everything the process reported (``hostname``, ``pid``, ``concurrency``,
    ``queues``, ``started_at``, ``rss_kb``); ``process["pid"]`` reads from it too.
    ``is_quiet`` is the state it reported; :meth:`quiet` asks it to become quiet.
    """

    identity: str
    info: dict[str, Any]
    busy: int
    is_quiet: bool
    broker: BrokerLike = field(repr=False, compare=False)

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

    def _signal(self, message: str) -> int:
        with translate_errors():
            return int(self.broker.client.publish(self.broker.keys.signal(self.identity),
                                                  message))

    def quiet(self) -> int:
        """Ask the process to stop taking new jobs; returns how many listeners got it.

        Pub/sub keeps nothing: a process that is not subscribed right now never sees it.
        """
        return self._signal("quiet")

    def resume(self) -> int:
        """Ask a quiet process to take jobs again."""
        return self._signal("resume")

    def stop(self) -> int:
        """Ask the process to finish its jobs (up to its shutdown timeout) and exit."""
        return self._signal("stop")

    def to_dict(self) -> dict[str, Any]:
        return {**self.info, "identity": self.identity, "busy": self.busy,
                "quiet": self.is_quiet}


def _process_from_hash(broker: BrokerLike, identity: str,
                       fields: Mapping[bytes | str, bytes | str]) -> Process:
    decoded = {text(name): text(value) for name, value in fields.items()}
    info = parse_object(decoded.get("info", "")) or {}
    try:
        busy = int(decoded.get("busy", "0"))
    except ValueError:
        busy = 0
    return Process(identity, info, busy, decoded.get("quiet") == "true", broker)


class ProcessSet:
    """The live processes: members of ``processes`` whose presence hash still exists.

    A member whose presence hash expired is removed from the set while iterating.
    """

    def __init__(self, source: Source) -> None:
        self._broker = resolve_broker(source)

    def __iter__(self) -> Iterator[Process]:
        broker = self._broker
        keys = broker.keys
        with translate_errors():
            identities = sorted(text(m) for m in broker.client.smembers(keys.processes))
            pipe = broker.client.pipeline(transaction=False)
            for identity in identities:
                pipe.hgetall(keys.process(identity))
            replies = pipe.execute()
            gone = [name for name, fields in zip(identities, replies, strict=True) if not fields]
            if gone:
                broker.client.srem(keys.processes, *gone)
        for identity, fields in zip(identities, replies, strict=True):
            if fields:
                yield _process_from_hash(broker, identity, fields)

    def size(self) -> int:
        """How many processes are alive."""
        return sum(1 for _ in self)

    def get(self, identity: str) -> Process | None:
        """The live process with this identity, or None."""
        with translate_errors():
            fields = self._broker.client.hgetall(self._broker.keys.process(identity))
        return _process_from_hash(self._broker, identity, fields) if fields else None

    def total_concurrency(self) -> int:
        """Processor threads over every live process."""
        return sum(process.concurrency or 0 for process in self)


@dataclass(frozen=True)
class Work:
    """A job some processor thread is running: its queue, start time and payload."""

    queue: str
    run_at: float
    job: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "run_at": self.run_at, "job": self.job}


def _work_from_json(raw: str) -> Work | None:
    entry = parse_object(raw)
    if entry is None:
        return None
    job = entry.get("payload")
    if isinstance(job, str):  # tolerate writers that stored the payload as a JSON string
        job = parse_object(job)
    run_at = entry.get("run_at")
    if not isinstance(job, dict) or not isinstance(run_at, (int, float)):
        return None
    queue = entry.get("queue")
    return Work(str(queue) if queue is not None else "", float(run_at), job)


class WorkSet:
    """Jobs running right now on live processes: ``(identity, thread_id, Work)``."""

    def __init__(self, source: Source) -> None:
        self._broker = resolve_broker(source)

    def __iter__(self) -> Iterator[tuple[str, str, Work]]:
        broker = self._broker
        identities = [process.identity for process in ProcessSet(broker)]
        with translate_errors():
            pipe = broker.client.pipeline(transaction=False)
            for identity in identities:
                pipe.hgetall(broker.keys.workers(identity))
            replies = pipe.execute()
        for identity, fields in zip(identities, replies, strict=True):
            for tid, raw in sorted(fields.items()):
                work = _work_from_json(text(raw))
                if work is None:
                    logger.warning("unreadable entry %s in %s: %.200s", text(tid),
                                   broker.keys.workers(identity), json.dumps(text(raw)))
                    continue
                yield identity, text(tid), work

    def size(self) -> int:
        """How many jobs are running on live processes."""
        return sum(1 for _ in self)
