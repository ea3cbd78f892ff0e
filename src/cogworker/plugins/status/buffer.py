"""What the ``status`` plugin keeps in a process: the statuses it has yet to write.

A change of a job's status is kept as it was made (a tuple on a deque: no lock on the job's
thread); the writing thread merges the changes onto the record this process last made for
each job, so a job that starts and finishes within one interval is written once, with its
last state. Inside a worker a
:class:`BackgroundFlush` writes the batch once a second; anywhere else (a web process
pushing, a supervisor burying orphans) each change is written at once.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections import deque
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


_Change = tuple[Payload, JobState | None, float, bool, dict[str, Any]]
"""One change as :meth:`StatusBuffer.record` keeps it: the payload, the new state (None:
unchanged), when, whether it starts afresh, the other fields changed."""


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class StatusBuffer:
    """The statuses of one process, by jid, and their writer.

    A change costs its thread one :meth:`collections.deque.append` of a tuple (no lock, no
    dict, no record): the writing thread folds the changes, in the order they were made,
    into one entry per jid (a plain dict of :class:`StatusRecord`'s fields, ``expires_at``
    aside) and builds the records it writes, so a job's two or three changes become one
    record per flush.
    """

    def __init__(self, store: StatusStore, ttl: float, clock: Callable[[], float] = time.time,
                 outages: OutageLog | None = None) -> None:
        self._store = store
        self._ttl = ttl
        self._clock = clock
        self._outages = outages if outages is not None else OutageLog()
        self._lock = threading.Lock()
        self._changes: deque[_Change] = deque()
        self._entries: dict[str, dict[str, Any]] = {}
        self._unwritten: dict[str, StatusRecord] = {}
        self._flusher: BackgroundFlush | None = None
        self._buffering = False  # between start() and stop(): the flusher writes
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
        if self._closed:
            return  # a worker that stopped: its late finishers no longer speak
        self._changes.append((job, state, self._clock() if at is None else at, fresh,
                              changes))
        if not self._buffering:
            self.flush_now()
        elif len(self._changes) >= MAX_BUFFERED:
            flusher = self._flusher
            if flusher is not None:
                flusher.flush_soon()

    # writing -------------------------------------------------------------------------------
    def _take_batch(self) -> dict[str, StatusRecord]:
        """The records to write now: the changes so far folded into their entries; the
        entries of jobs this process no longer runs go."""
        with self._lock:
            batch = self._unwritten
            self._unwritten = {}
            changed = self._fold()
            keep = self._buffering
            for jid in changed:
                entry = self._entries[jid]
                batch[jid] = StatusRecord(expires_at=entry["updated_at"] + self._ttl, **entry)
                if not keep or entry["state"] != KEPT_STATE:
                    del self._entries[jid]
        return batch

    def _fold(self) -> dict[str, None]:
        """Apply the changes made so far to the entries (under ``_lock``); the jids changed,
        in order."""
        changed: dict[str, None] = {}
        entries, changes = self._entries, self._changes
        for _ in range(len(changes)):  # appends racing this loop wait for the next flush
            job, state, at, fresh, values = changes.popleft()
            jid = str(job.get("jid"))
            entry = None if fresh else entries.get(jid)
            if entry is None:
                entry = entries[jid] = _from_payload(jid, job)
            if state is not None:
                entry["state"] = state
            entry["updated_at"] = at
            fields = values.pop("fields", None)
            if fields:
                entry["fields"] = {**entry["fields"], **fields}
            entry.update(values)
            changed[jid] = None
        return changed

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
            idle = not self._buffering
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
            self._buffering = True
        self._flusher.start()

    def stop(self) -> None:
        """Write what is buffered and stop listening (a worker's shutdown)."""
        self._buffering = False  # a change made during the last write is written at once
        flusher = self._flusher
        if flusher is not None:
            flusher.stop()
        else:
            self.flush_now()
        with self._lock:
            self._closed = True
            self._entries.clear()
            self._changes.clear()


def _from_payload(jid: str, job: Payload) -> dict[str, Any]:
    return {"jid": jid, "state": "queued", "updated_at": 0.0,
            "class_name": _text(job.get("class")), "queue": _text(job.get("queue")),
            "pct": None, "message": None, "error_class": _text(job.get("error_class")),
            "error_message": _text(job.get("error_message")), "fields": {}}
