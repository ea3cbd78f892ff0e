"""The schedule, retry and dead sets: list, find by jid, retry now, delete, delete all.

Every move back to a queue is the atomic ``claim_and_requeue`` script (push first, then
remove, only if the entry is still there), with ``enqueued_at`` re-stamped; so a worker's
poller and a person retrying the same entry never both enqueue it. A job retried from dead
is marked ``manual_retry``: its run is one attempt beyond its budget (it goes back to dead
if it fails), and the worker logs it as "manual retry".

An entry is matched by its exact bytes, also when they are not UTF-8 (an older version
could store such a record): :attr:`SortedEntry.value` keeps them (``surrogateescape``), while
the fields shown are read from a copy with each invalid byte replaced by U+FFFD. Such an
entry can be deleted, never requeued.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar

from cogworker.api._source import (
    PAGE_SIZE,
    SYNTHETIC_JID_PREFIX,
    JobRecord,
    Source,
    resolve_broker,
    text,
)
from cogworker.core.broker import SortedSetName
from cogworker.core.errors import BrokerError, BrokerUnavailableError, PayloadError
from cogworker.core.payload import MANUAL_RETRY, encode
from cogworker.redis.errors import translate_errors
from cogworker.redis.requeue import text as exact_text
from cogworker.redis.requeue import wire

logger = logging.getLogger(__name__)

_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def _pairs(reply: Any) -> list[tuple[str, float]]:
    """A WITHSCORES reply as (exact raw text, score) pairs (see the module docstring)."""
    return [(exact_text(raw), float(score)) for raw, score in reply]


def _is_utf8(raw: str) -> bool:
    return raw.isascii() or not _ESCAPED_BYTE.search(raw)


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


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
    clears_attempts: ClassVar[bool] = True
    """Whether removing an entry also drops its ``job_attempts:<jid>`` failure trail."""
    marks_manual_retry: ClassVar[bool] = False
    """Whether a job put back on its queue from here is marked ``manual_retry``."""

    def __init__(self, source: Source) -> None:
        self._broker = resolve_broker(source)
        self.key = self._broker.keys.sorted_set(self.set_name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r})"

    def size(self) -> int:
        with translate_errors():
            return int(self._broker.client.zcard(self.key))

    def _entry(self, raw: str, score: float) -> SortedEntry:
        shown = raw if _is_utf8(raw) else text(wire(raw))  # invalid bytes → U+FFFD
        return SortedEntry(raw, JobRecord.from_raw(shown).item, score, self)

    def entries(self, newest_first: bool = True, limit: int | None = None) -> Iterator[SortedEntry]:
        """Entries by score, highest first (or lowest first), read 50 at a time."""
        start, seen = 0, 0
        while limit is None or seen < limit:
            stop = start + PAGE_SIZE - 1
            with translate_errors():
                if newest_first:
                    reply = self._broker.client.zrevrange(self.key, start, stop, withscores=True)
                else:
                    reply = self._broker.client.zrange(self.key, start, stop, withscores=True)
            page = _pairs(reply)
            for raw, score in page[: None if limit is None else limit - seen]:
                seen += 1
                yield self._entry(raw, score)
            if len(page) < PAGE_SIZE:
                return
            start += PAGE_SIZE

    def __iter__(self) -> Iterator[SortedEntry]:
        return self.entries()

    def find_all(self, jid: str) -> list[SortedEntry]:
        """Every entry with this jid (a stand-in ``unparseable-...`` jid works too)."""
        if jid.startswith(SYNTHETIC_JID_PREFIX):
            pattern = "*"
        else:  # the jid as it appears inside the stored JSON, glob characters escaped
            as_json = json.dumps(jid, ensure_ascii=False)[1:-1]
            pattern = "*" + _GLOB_SPECIAL.sub(r"\\\1", as_json) + "*"
        found: dict[str, SortedEntry] = {}
        with translate_errors():
            replies = self._broker.client.zscan_iter(self.key, match=pattern, count=500)
            for raw, score in _pairs(replies):
                entry = self._entry(raw, score)
                if entry.jid == jid:
                    found[entry.value] = entry
        return sorted(found.values(), key=lambda entry: entry.score)

    def find(self, jid: str) -> SortedEntry | None:
        """The entry with this jid (the earliest by score if several), or None."""
        matches = self.find_all(jid)
        return matches[0] if matches else None

    def requeue(self, entry: SortedEntry) -> bool:
        """Move ``entry`` onto its queue atomically (see :meth:`SortedEntry.retry_now`)."""
        if not _is_utf8(entry.value):
            raise PayloadError(
                f"entry {entry.jid} in {self.key} holds bytes that are not UTF-8, so no worker "
                "could run it; delete it instead", entry.value)
        if not entry.requeueable or entry.item is None or entry.queue is None:
            raise PayloadError(
                f"entry {entry.jid} in {self.key} is not a job naming its queue "
                f"(class {entry.klass!r}), so it cannot be put back on a queue; "
                "delete it instead", entry.value)
        keys = self._broker.keys
        job = dict(entry.item)
        job["enqueued_at"] = time.time()
        if self.marks_manual_retry:
            job[MANUAL_RETRY] = True
        moved = self._broker.scripts.run(
            "cogworker.redis", "claim_and_requeue",
            keys=[self.key, keys.queue(entry.queue), keys.queues],
            args=[wire(entry.value), encode(job), entry.queue, keys.wakeup],
        )
        return bool(moved)

    def remove(self, entry: SortedEntry) -> bool:
        """Remove ``entry`` (its exact raw string); False when it was already gone."""
        with translate_errors():
            removed = bool(self._broker.client.zrem(self.key, wire(entry.value)))
            if removed and self.clears_attempts and entry.item is not None:
                self._broker.client.delete(self._broker.keys.job_attempts(entry.jid))
        return removed

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
            if (not entry.requeueable or not _is_utf8(entry.value)
                    or (queue is not None and entry.queue != queue)):
                continue
            try:
                moved += self.requeue(entry)
            except BrokerUnavailableError:
                raise
            except BrokerError as exc:  # e.g. its queue key holds another type: skip it
                logger.warning("could not move %s from %s to its queue: %s", entry.jid,
                               self.key, exc)
        return moved

    def _snapshot(self) -> Iterator[SortedEntry]:
        """The entries present now, lowest score first, read in pages by score cursor.

        Paging by index would skip entries while earlier ones are being removed.
        """
        budget = self.size()
        low: str = "-inf"
        seen_at_low: set[str] = set()
        while budget > 0:
            with translate_errors():
                page = _pairs(self._broker.client.zrangebyscore(
                    self.key, low, "+inf", start=0, num=PAGE_SIZE + len(seen_at_low),
                    withscores=True))
            fresh = [(raw, score) for raw, score in page if raw not in seen_at_low]
            if not fresh:
                return
            for raw, score in fresh[:budget]:
                budget -= 1
                yield self._entry(raw, score)
            last_score = fresh[-1][1]
            if repr(last_score) != low:
                seen_at_low = set()
            low = repr(last_score)
            seen_at_low |= {raw for raw, score in fresh if score == last_score}

    def clear(self) -> int:
        """Delete every entry (and their failure trails); returns how many were removed."""
        jids = [entry.jid for entry in self._snapshot() if entry.item is not None]
        with translate_errors():
            pipe = self._broker.client.pipeline(transaction=True)
            pipe.zcard(self.key)
            pipe.delete(self.key)
            count = int(pipe.execute()[0])
            if self.clears_attempts:
                for start in range(0, len(jids), 500):
                    batch = jids[start : start + 500]
                    self._broker.client.delete(
                        *(self._broker.keys.job_attempts(jid) for jid in batch))
        return count


class ScheduledSet(SortedSet):
    """Jobs to run later (``perform_in``/``perform_at``); score = due time."""

    set_name = "schedule"
    clears_attempts = False


class RetrySet(SortedSet):
    """Failed jobs waiting for their next attempt; score = when it is due."""

    set_name = "retry"


class DeadSet(SortedSet):
    """Jobs that used up their retries; score = time of death. Nothing expires here."""

    set_name = "dead"
    marks_manual_retry = True
