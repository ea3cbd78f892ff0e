"""What the ``status`` plugin keeps in a process: the statuses it has yet to write.

Every change of a job's status becomes its whole record (merged onto the record this
process last made for it), kept by jid until the next flush; so a job that starts and
finishes within one interval is written once, with its last state. Inside a worker a
:class:`BackgroundFlush` writes the batch once a second; anywhere else (a web process
pushing, a supervisor burying orphans) each change is written at once.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from cogworker.core.background_flush import BackgroundFlush
from cogworker.core.broker.status import JobState, StatusRecord, StatusStore
from cogworker.core.outage import OutageLog
from cogworker.core.payload import Payload

SITE = "status"
KEPT_STATE = "working"
"""The state whose entry outlives a flush: this process still runs the job, and its next
change merges onto what it has (progress, stored fields)."""
MAX_BUFFERED = 10_000
"""Statuses buffered before a flush is asked for early."""


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class StatusBuffer:
    """The statuses of one process, by jid, and their writer.

    An entry is a plain dict of :class:`StatusRecord`'s fields (``expires_at`` aside),
    changed in place under the lock; the records are built once per job and flush, so a
    job's two or three changes cost a few dict updates on its thread.
    """

    def __init__(self, store: StatusStore, ttl: float, clock: Callable[[], float] = time.time,
                 outages: OutageLog | None = None) -> None:
        self._store = store
        self._ttl = ttl
        self._clock = clock
        self._outages = outages if outages is not None else OutageLog()
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = {}
        self._dirty: set[str] = set()
        self._unwritten: dict[str, StatusRecord] = {}
        self._flusher: BackgroundFlush | None = None
        self._closed = False
        self._exit_flush = False

    @property
    def ttl(self) -> float:
        return self._ttl

    # changes -------------------------------------------------------------------------------
    def record(self, job: Payload, state: JobState | None, *, fresh: bool = False,
               at: float | None = None, **changes: Any) -> None:
        """Change ``job``'s status (``state`` None keeps it); ``fresh`` starts from the
        payload alone (a new run); ``changes`` are :class:`StatusRecord` fields, ``fields``
        merged into the stored ones."""
        jid = str(job.get("jid"))
        now = self._clock() if at is None else at
        with self._lock:
            if self._closed:
                return  # a worker that stopped: its late finishers no longer speak
            entry = None if fresh else self._entries.get(jid)
            if entry is None:
                entry = self._entries[jid] = _from_payload(jid, job)
            if state is not None:
                entry["state"] = state
            entry["updated_at"] = now
            fields = changes.pop("fields", None)
            if fields:
                entry["fields"] = {**entry["fields"], **fields}
            entry.update(changes)
            self._dirty.add(jid)
            pending = len(self._dirty)
        self._written(pending)

    def _written(self, pending: int) -> None:
        flusher = self._flusher
        if flusher is None or not flusher.running:
            self.flush_now()
        elif pending >= MAX_BUFFERED:
            flusher.flush_soon()

    # writing -------------------------------------------------------------------------------
    def _take_batch(self) -> dict[str, StatusRecord]:
        """The records to write now; entries of jobs this process no longer runs go."""
        with self._lock:
            batch = self._unwritten
            self._unwritten = {}
            keep = self._flusher is not None and self._flusher.running
            for jid in self._dirty:
                entry = self._entries[jid]
                batch[jid] = StatusRecord(expires_at=entry["updated_at"] + self._ttl, **entry)
                if not keep or entry["state"] != KEPT_STATE:
                    del self._entries[jid]
            self._dirty = set()
        return batch

    def flush(self) -> None:
        """Write the buffered statuses in one call; on failure they are kept for the next
        (a newer change of the same jid wins) and the error propagates."""
        batch = self._take_batch()
        if not batch:
            return
        try:
            self._store.write(list(batch.values()))
        except BaseException:
            with self._lock:
                self._unwritten = {**batch, **self._unwritten}
            raise

    def flush_now(self) -> None:
        """:meth:`flush`, its failure reported to the outage log (best-effort)."""
        try:
            self.flush()
        except Exception as exc:
            self._outages.report(SITE, exc)
        else:
            self._outages.recovered(SITE)

    def add_pushed(self, record: StatusRecord) -> None:
        """A bulk push's status: written with the next flush, within one interval (a
        process that pushes but runs no worker gets a flusher of its own on first use)."""
        with self._lock:
            if self._closed:
                return
            self._unwritten[record.jid] = record
            idle = self._flusher is None or not self._flusher.running
        if idle:
            self.start()
            if not self._exit_flush:
                self._exit_flush = True
                atexit.register(self.flush_now)

    def write_now(self, records: Sequence[StatusRecord]) -> None:
        """Write ``records`` at once, past the buffer (a push's ``queued``); best-effort."""
        try:
            self._store.write(records)
        except Exception as exc:
            self._outages.report(SITE, exc)
        else:
            self._outages.recovered(SITE)

    def start(self, interval: float | None = None) -> None:
        """Buffer from now on, written every ``interval`` seconds (a worker's start-up)."""
        with self._lock:
            self._closed = False
            if self._flusher is None:
                kwargs = {} if interval is None else {"interval": interval}
                self._flusher = BackgroundFlush("cogworker-status", self.flush,
                                                outages=self._outages, **kwargs)
        self._flusher.start()

    def stop(self) -> None:
        """Write what is buffered and stop listening (a worker's shutdown)."""
        flusher = self._flusher
        if flusher is not None:
            flusher.stop()
        else:
            self.flush_now()
        with self._lock:
            self._closed = True
            self._entries.clear()
            self._dirty.clear()


def _from_payload(jid: str, job: Payload) -> dict[str, Any]:
    return {"jid": jid, "state": "queued", "updated_at": 0.0,
            "class_name": _text(job.get("class")), "queue": _text(job.get("queue")),
            "pct": None, "message": None, "error_class": _text(job.get("error_class")),
            "error_message": _text(job.get("error_message")), "fields": {}}
