"""The schedule, retry and dead sets: list, find by jid, retry now, delete, delete all.

Every move back to a queue is ``broker.sets.requeue`` (push first, then remove, only if
the entry is still there, in one atomic step), with ``enqueued_at`` re-stamped; so a
worker's poller and a person retrying the same entry never both enqueue it. A job retried
from dead is marked ``manual_retry``: its run is one attempt beyond its budget (it goes
back to dead if it fails), and the worker logs it as "manual retry".

An entry is matched by its exact bytes, also when they are not UTF-8 (an older version
could store such a record): :attr:`SortedEntry.value` keeps them (``surrogateescape``), while
the fields shown are read from a copy with each invalid byte replaced by U+FFFD. Such an
entry can be deleted, never requeued.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast, runtime_checkable

from cogworker.api._source import (
    PAGE_SIZE,
    SYNTHETIC_JID_PREFIX,
    JobRecord,
    Source,
    is_utf8,
    resolve_broker,
)
from cogworker.api.search import WINDOW, normalize_query
from cogworker.core.broker import SetEntry, SortedSetName
from cogworker.core.errors import BrokerError, BrokerUnavailableError, PayloadError
from cogworker.core.payload import MANUAL_RETRY, encode

if TYPE_CHECKING:
    from cogworker.core.hooks import Hooks
    from cogworker.core.plugin_host import PluginHost

logger = logging.getLogger(__name__)

CLEAR_NOTICE_BATCH = 1000
"""Jids read per page, and passed per ``cogworker_jobs_deleted`` call, by a clear."""


@runtime_checkable
class _HasHooks(Protocol):
    """An app (it has hooks to tell plugins what was deleted), not a bare broker."""

    @property
    def hooks(self) -> Hooks: ...

    @property
    def broker(self) -> object: ...


@dataclass(frozen=True)
class SortedEntry(JobRecord):
    """One entry of a sorted set: the job plus its score (due time or time of death)."""

    score: float = 0.0
    sorted_set: SortedSet | None = field(default=None, repr=False, compare=False)

    @property
    def at(self) -> datetime:
        """The score as a UTC datetime."""
        return datetime.fromtimestamp(self.score, tz=timezone.utc)

    @property
    def error_class(self) -> str | None:
        value = self.get("error_class")
        return value if isinstance(value, str) else None

    @property
    def error_message(self) -> str | None:
        value = self.get("error_message")
        return value if isinstance(value, str) else None

    @property
    def retry_count(self) -> int:
        value = self.get("retry_count", 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def _owner(self) -> SortedSet:
        if self.sorted_set is None:
            raise ValueError(f"entry {self.jid} is not attached to a sorted set")
        return self.sorted_set

    def retry_now(self) -> bool:
        """Put this job back on its queue now; False when it was no longer in the set.

        Raises :class:`~cogworker.core.errors.PayloadError` for an entry that is not a job
        naming its queue (an ``(unparseable)`` burial): delete it instead.
        """
        return self._owner().requeue(self)

    def delete(self) -> bool:
        """Remove this entry; False when it was no longer in the set."""
        return self._owner().remove(self)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(score=self.score, at=self.at.isoformat(), retry_count=self.retry_count,
                    error_class=self.error_class, error_message=self.error_message)
        return data


class SortedSet:
    """Base of :class:`ScheduledSet`, :class:`RetrySet` and :class:`DeadSet`."""

    set_name: ClassVar[SortedSetName]
    marks_manual_retry: ClassVar[bool] = False
    """Whether a job put back on its queue from here is marked ``manual_retry``."""

    def __init__(self, source: Source) -> None:
        self._sets = resolve_broker(source).sets
        self._host = cast("PluginHost", source) if isinstance(source, _HasHooks) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.set_name!r})"

    def size(self) -> int:
        return self._sets.size(self.set_name)

    def entry(self, raw: str, score: float) -> SortedEntry:
        """The entry of this set with this exact raw and score."""
        return SortedEntry(raw, JobRecord.from_raw(raw).item, score, self)

    def _entries_of(self, found: list[SetEntry]) -> list[SortedEntry]:
        return [self.entry(item.raw, item.score) for item in found]

    def entries(self, newest_first: bool = True, limit: int | None = None) -> Iterator[SortedEntry]:
        """Entries by score, highest first (or lowest first), read 50 at a time."""
        start, seen = 0, 0
        while limit is None or seen < limit:
            page = self._sets.page(self.set_name, start, PAGE_SIZE, newest_first=newest_first)
            for item in page[: None if limit is None else limit - seen]:
                seen += 1
                yield self.entry(item.raw, item.score)
            if len(page) < PAGE_SIZE:
                return
            start += PAGE_SIZE

    def __iter__(self) -> Iterator[SortedEntry]:
        return self.entries()

    def find_all(self, jid: str) -> list[SortedEntry]:
        """Every entry with this jid (a stand-in ``unparseable-...`` jid works too),
        searched inside the broker a window at a time."""
        if jid.startswith(SYNTHETIC_JID_PREFIX):
            needle = ""  # a stand-in jid is in no raw text: every entry is a candidate
        else:  # the jid as it appears inside the stored JSON
            needle = normalize_query(json.dumps(jid, ensure_ascii=False)[1:-1])
        found: dict[str, SortedEntry] = {}
        position: int | None = 0
        while position is not None:
            page = self._sets.search(self.set_name, needle, start=position, limit=WINDOW,
                                     window=WINDOW)
            for hit in page.hits:
                entry = self.entry(hit.raw, hit.score or 0.0)
                if entry.jid == jid:
                    found[entry.value] = entry
            position = page.next_position
        return sorted(found.values(), key=lambda entry: entry.score)

    def find(self, jid: str) -> SortedEntry | None:
        """The entry with this jid (the earliest by score if several), or None."""
        matches = self.find_all(jid)
        return matches[0] if matches else None

    def requeue(self, entry: SortedEntry) -> bool:
        """Move ``entry`` onto its queue atomically (see :meth:`SortedEntry.retry_now`)."""
        if not is_utf8(entry.value):
            raise PayloadError(
                f"entry {entry.jid} in {self.set_name} holds bytes that are not UTF-8, so no "
                "worker could run it; delete it instead", entry.value)
        if not entry.requeueable or entry.item is None or entry.queue is None:
            raise PayloadError(
                f"entry {entry.jid} in {self.set_name} is not a job naming its queue "
                f"(class {entry.klass!r}), so it cannot be put back on a queue; "
                "delete it instead", entry.value)
        job = dict(entry.item)
        job["enqueued_at"] = time.time()
        if self.marks_manual_retry:
            job[MANUAL_RETRY] = True
        return self._sets.requeue(self.set_name, entry.value, encode(job), entry.queue)

    def remove(self, entry: SortedEntry) -> bool:
        """Remove ``entry`` (its exact raw string); False when it was already gone. For
        retry and dead its jid's failure trail goes too (``cogworker_jobs_deleted``, when
        this set was built from an app)."""
        removed = self._sets.delete(self.set_name, entry.value)
        if removed:
            self._deleted([entry.jid])
        return removed

    def _deleted(self, jids: list[str]) -> None:
        if self._host is not None and jids:
            self._host.hooks.jobs_deleted(self._host, jids, self.set_name)

    def delete(self, jid: str) -> int:
        """Remove every entry with this jid; returns how many were removed."""
        return sum(self.remove(entry) for entry in self.find_all(jid))

    def retry_all(self, queue: str | None = None) -> int:
        """Move every requeueable entry (of ``queue`` only, if given) back to its queue.

        Entries that cannot be requeued stay. Works through the entries present when it
        started, lowest score first; returns how many were moved.
        """
        moved = 0
        for entry in self._snapshot():
            if (not entry.requeueable or not is_utf8(entry.value)
                    or (queue is not None and entry.queue != queue)):
                continue
            try:
                moved += self.requeue(entry)
            except BrokerUnavailableError:
                raise
            except BrokerError as exc:  # e.g. its queue's stored value is unusable: skip it
                logger.warning("could not move %s from %s to its queue: %s", entry.jid,
                               self.set_name, exc)
        return moved

    def _snapshot(self) -> Iterator[SortedEntry]:
        """The entries present now, lowest score first, read in pages by score cursor.

        Paging by index would skip entries while earlier ones are being removed.
        """
        budget = self.size()
        low = float("-inf")
        seen_at_low: set[str] = set()
        while budget > 0:
            page = self._sets.by_score(self.set_name, low, float("inf"),
                                       limit=PAGE_SIZE + len(seen_at_low))
            fresh = [item for item in page if item.raw not in seen_at_low]
            if not fresh:
                return
            for item in fresh[:budget]:
                budget -= 1
                yield self.entry(item.raw, item.score)
            last_score = fresh[-1].score
            if last_score != low:
                seen_at_low = set()
            low = last_score
            seen_at_low |= {item.raw for item in fresh if item.score == last_score}

    def clear(self) -> int:
        """Delete every entry (and, for retry and dead, their failure trails); returns how
        many were removed. Built from an app with a plugin implementing
        ``cogworker_jobs_deleted``, it reads the jids first (a page at a time) for it: an
        entry added meanwhile keeps its trail until the trail expires."""
        host = self._host
        jids = self._all_jids() if host is not None and host.hooks.wants_jobs_deleted() else []
        count = self._sets.clear(self.set_name)
        for start in range(0, len(jids), CLEAR_NOTICE_BATCH):
            self._deleted(jids[start:start + CLEAR_NOTICE_BATCH])
        return count

    def _all_jids(self) -> list[str]:
        jids: list[str] = []
        start = 0
        while True:
            page = self._sets.page(self.set_name, start, CLEAR_NOTICE_BATCH,
                                   newest_first=False)
            jids += [JobRecord.from_raw(item.raw).jid for item in page]
            if len(page) < CLEAR_NOTICE_BATCH:
                return jids
            start += CLEAR_NOTICE_BATCH


class ScheduledSet(SortedSet):
    """Jobs to run later (``perform_in``/``perform_at``); score = due time."""

    set_name = "schedule"


class RetrySet(SortedSet):
    """Failed jobs waiting for their next attempt; score = when it is due."""

    set_name = "retry"


class DeadSet(SortedSet):
    """Jobs that used up their retries; score = time of death. Nothing expires here."""

    set_name = "dead"
    marks_manual_retry = True
