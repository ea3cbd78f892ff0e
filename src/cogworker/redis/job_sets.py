"""``broker.sets`` on Redis: the schedule, retry and dead sorted sets, and graduation.

Graduation moves each due entry in one Lua step (``claim_and_requeue.lua``): the queue is
written first and the entry removed second, and an entry another process already took is
left alone, so two processes graduating the same set push every entry exactly once. An
entry that is not a job is buried in dead with its bytes (``bury_entry.lua``). An entry
whose move fails for any reason other than Redis being unavailable (a queue key of the
wrong type...) is pushed :data:`~cogworker.core.broker.DEFER_DELAY` seconds into the
future, so it cannot block the window of oldest entries forever. Every write into dead
trims it to its caps in the same MULTI.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Literal

import redis

from cogworker.core.broker import (
    DEFER_DELAY,
    GraduatedSetName,
    GraduationReport,
    SearchPage,
    SetEntry,
    SortedSetName,
)
from cogworker.core.errors import BrokerError, BrokerUnavailableError, PayloadError
from cogworker.core.payload import decode, dumps, encode, unparseable_wrapper
from cogworker.redis.dead_caps import DEFAULT_DEAD_MAX_JOBS, DEFAULT_DEAD_TIMEOUT
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text, text, wire
from cogworker.redis.requeue_keys import parse_job
from cogworker.redis.scripts import Scripts
from cogworker.redis.search import search_window
from cogworker.redis.stats_store import THROUGHPUT_TTL

logger = logging.getLogger(__name__)

LUA_PACKAGE = "cogworker.redis"
TRAIL_BATCH = 500
"""Entries read (and failure trails deleted) per step when a cleared set is walked."""
CLEARING_TTL = 3600
"""Seconds a set renamed aside by :meth:`RedisJobSets.clear` lives if the walk stops."""
_LOGGED_RAW_LIMIT = 200
_TRAILS: frozenset[str] = frozenset({"retry", "dead"})

Outcome = Literal["moved", "buried", "gone"]


def _pairs(reply: Any) -> list[SetEntry]:
    return [SetEntry(text(raw), float(score)) for raw, score in reply]


class RedisJobSets:
    """:class:`cogworker.core.broker.JobSets` on one client and key schema.

    The dead set is capped on every write to it: at most ``dead_max_jobs`` entries, none
    older than ``dead_timeout`` seconds.
    """

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts, *,
                 dead_max_jobs: int = DEFAULT_DEAD_MAX_JOBS,
                 dead_timeout: float = DEFAULT_DEAD_TIMEOUT) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts
        self.dead_max_jobs = dead_max_jobs
        self.dead_timeout = dead_timeout

    # writing ---------------------------------------------------------------------------
    def file(self, set_name: SortedSetName, score: float, raw: str) -> None:
        """ZADD ``raw``; for dead, trim by age and count in the same MULTI."""
        key = self._keys.sorted_set(set_name)
        if set_name != "dead":
            with translate_errors():
                self._client.zadd(key, {wire(raw): score})
            return
        oldest_kept = time.time() - self.dead_timeout
        pipe = self._client.pipeline(transaction=True)
        pipe.zadd(key, {wire(raw): score})
        pipe.zremrangebyscore(key, "-inf", f"({oldest_kept!r}")
        pipe.zremrangebyrank(key, 0, -(self.dead_max_jobs + 1))
        with translate_errors():
            pipe.execute()

    def graduate(self, set_name: GraduatedSetName, now: float, limit: int) -> GraduationReport:
        report = GraduationReport()
        if limit < 1:
            return report
        set_key = self._keys.sorted_set(set_name)
        with translate_errors():
            found: list[Any] = self._client.zrangebyscore(set_key, "-inf", now, start=0,
                                                          num=limit)
        raws = [text(raw) for raw in found]
        for raw in raws:
            try:
                outcome = self._graduate_one(set_name, raw, now)
            except BrokerUnavailableError:
                raise
            except BrokerError as exc:
                if self._defer(set_key, raw, now, exc):
                    report.deferred += 1
                continue
            if outcome == "moved":
                report.moved += 1
            elif outcome == "buried":
                report.buried += 1
        return report

    def _graduate_one(self, set_name: SortedSetName, raw: str, now: float) -> Outcome:
        try:
            job = decode(raw)
        except PayloadError as exc:
            return "buried" if self._bury(set_name, raw, exc.reason, now) else "gone"
        job["enqueued_at"] = now
        try:
            new_raw = encode(job)
        except (TypeError, ValueError) as exc:  # e.g. a NaN that json.loads accepted
            reason = f"cannot be stored again: {exc}"
            return "buried" if self._bury(set_name, raw, reason, now) else "gone"
        if not self.requeue(set_name, raw, new_raw, job["queue"]):
            return "gone"
        logger.debug("%s entry jid=%s moved to queue %s", set_name, job.get("jid"),
                     job["queue"])
        return "moved"

    def _bury(self, set_name: SortedSetName, raw: str, reason: str, now: float) -> bool:
        """File an entry that is not a job into dead (wrapped, bytes kept); count a failure.
        False when the entry was no longer in the set."""
        wrapper = dumps(unparseable_wrapper(raw, None, reason, now))
        keys = [self._keys.sorted_set(set_name), self._keys.dead, self._keys.stats_failed,
                self._keys.throughput(int(now // 3600))]
        buried = bool(self._scripts.run(LUA_PACKAGE, "bury_entry", keys,
                                        [wire(raw), wrapper, now, THROUGHPUT_TTL]))
        if buried:
            logger.error("unparseable entry in %s moved to dead: %s (%s)",
                         keys[0], _shown(raw), reason)
        return buried

    def _defer(self, set_key: str, raw: str, now: float, cause: BrokerError) -> bool:
        try:
            with translate_errors():
                # XX: never re-add an entry another process has moved meanwhile.
                self._client.zadd(set_key, {wire(raw): now + DEFER_DELAY}, xx=True)
        except BrokerUnavailableError:
            raise
        except BrokerError as exc:
            logger.error("could not move an entry of %s onto its queue (%s), nor defer it "
                         "(%s): %s", set_key, cause, exc, _shown(raw))
            return False
        logger.error("could not move an entry of %s onto its queue (%s); trying again in "
                     "%.0f s: %s", set_key, cause, DEFER_DELAY, _shown(raw))
        return True

    def requeue(self, set_name: SortedSetName, raw: str, new_raw: str, queue: str) -> bool:
        if not queue:
            raise ValueError("a queue name must not be empty")
        keys = [self._keys.sorted_set(set_name), self._keys.queue(queue), self._keys.queues]
        args: list[str | bytes] = [wire(raw), wire(new_raw), queue, self._keys.wakeup]
        return bool(self._scripts.run(LUA_PACKAGE, "claim_and_requeue", keys, args))

    def reschedule(self, set_name: SortedSetName, raw: str, score: float) -> bool:
        key = self._keys.sorted_set(set_name)
        pipe = self._client.pipeline(transaction=True)
        pipe.zscore(key, wire(raw))
        pipe.zadd(key, {wire(raw): score}, xx=True)
        with translate_errors():
            present, _ = pipe.execute()
        return present is not None

    def delete(self, set_name: SortedSetName, raw: str) -> bool:
        key = self._keys.sorted_set(set_name)
        with translate_errors():
            removed = bool(self._client.zrem(key, wire(raw)))
            jid = _jid_of(raw)
            if removed and set_name in _TRAILS and jid is not None:
                self._client.delete(self._keys.job_attempts(jid))
        return removed

    def clear(self, set_name: SortedSetName) -> int:
        """One Lua step empties the set; for retry and dead it is renamed aside first and
        walked in bounded steps to drop the failure trails of its jids."""
        key = self._keys.sorted_set(set_name)
        trails = set_name in _TRAILS
        aside = f"{self._keys.prefix}:clearing:{set_name}:{uuid.uuid4().hex}"
        count = int(self._scripts.run(LUA_PACKAGE, "set_clear", [key, aside],
                                      ["1" if trails else "0", CLEARING_TTL]))
        if trails and count:
            self._drop_trails(aside)
        return count

    def _drop_trails(self, aside: str) -> None:
        try:
            start = 0
            while True:
                with translate_errors():
                    raws: list[Any] = self._client.zrange(aside, start,
                                                          start + TRAIL_BATCH - 1)
                jids = {jid for raw in raws if (jid := _jid_of(text(raw))) is not None}
                if jids:
                    with translate_errors():
                        self._client.delete(*(self._keys.job_attempts(jid) for jid in jids))
                if len(raws) < TRAIL_BATCH:
                    break
                start += TRAIL_BATCH
            with translate_errors():
                self._client.delete(aside)
        except BrokerError as exc:
            logger.warning("the set was cleared, but dropping the failure trails of its jobs "
                           "stopped (%s); %s expires within %d s", exc, aside, CLEARING_TTL)

    # reading ---------------------------------------------------------------------------
    def size(self, set_name: SortedSetName, *, max_score: float | None = None) -> int:
        key = self._keys.sorted_set(set_name)
        with translate_errors():
            if max_score is None:
                return int(self._client.zcard(key))
            return int(self._client.zcount(key, "-inf", max_score))

    def page(self, set_name: SortedSetName, start: int, count: int, *,
             newest_first: bool = True) -> list[SetEntry]:
        key = self._keys.sorted_set(set_name)
        if start < 0 or count < 0:
            raise ValueError(f"a page starts at >= 0 and holds >= 0 entries, not {start} and "
                             f"{count}")
        if count == 0:
            return []
        read = self._client.zrevrange if newest_first else self._client.zrange
        with translate_errors():
            reply = read(key, start, start + count - 1, withscores=True)
        return _pairs(reply)

    def by_score(self, set_name: SortedSetName, low: float, high: float, *,
                 limit: int) -> list[SetEntry]:
        key = self._keys.sorted_set(set_name)
        if limit < 1:
            raise ValueError(f"a read by score returns at least 1 entry, not {limit}")
        with translate_errors():
            reply = self._client.zrangebyscore(key, low, high, start=0, num=limit,
                                               withscores=True)
        return _pairs(reply)

    def search(self, set_name: SortedSetName, needle: str, *, start: int = 0,
               newest_first: bool = True, limit: int, window: int) -> SearchPage:
        return search_window(self._scripts, self._keys.sorted_set(set_name), "zset", needle,
                             start=start, newest_first=newest_first, limit=limit,
                             window=window)


def _jid_of(raw: str) -> str | None:
    job = parse_job(raw)
    jid = job.get("jid") if job is not None else None
    return jid if isinstance(jid, str) and jid else None


def _shown(raw: str) -> str:
    shown = as_text(wire(raw))
    return shown if len(shown) <= _LOGGED_RAW_LIMIT else shown[:_LOGGED_RAW_LIMIT] + "..."



