"""Moving due entries of the schedule and retry sets onto their queues.

Each entry moves in one Lua step (``claim_and_requeue.lua``): the queue is written first and
the entry removed second, and an entry another process already took is left alone, so two
processes graduating the same set push every entry exactly once. An entry that is not a job
is buried in dead with its bytes (``bury_entry.lua``). An entry whose move fails for any
reason other than Redis being unavailable (a queue key of the wrong type...) is pushed
60 s into the future, so it cannot block the window of oldest entries forever.
"""

from __future__ import annotations

import logging
from typing import Literal, cast

import redis

from cogworker.core.broker import GraduationReport, SortedSetName
from cogworker.core.errors import BrokerError, BrokerUnavailableError, PayloadError
from cogworker.core.payload import decode, dumps, encode, unparseable_wrapper
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)

LUA_PACKAGE = "cogworker.redis"
DEFER_DELAY = 60.0
THROUGHPUT_TTL = 25 * 3600
_LOGGED_RAW_LIMIT = 200

Raw = bytes | str
Outcome = Literal["moved", "buried", "gone"]


class Graduator:
    """Graduation and single-entry requeue for one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def graduate(self, set_name: Literal["schedule", "retry"], now: float,
                 limit: int) -> GraduationReport:
        """Move up to ``limit`` entries due at ``now``; see the module docstring.

        Raises ``BrokerUnavailableError`` when Redis cannot be reached (entries already
        moved stay moved; the rest wait for the next pass).
        """
        set_key = self._keys.sorted_set(set_name)
        with translate_errors():
            raws = cast("list[Raw]", self._client.zrangebyscore(set_key, "-inf", now,
                                                                start=0, num=limit))
        report = GraduationReport()
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

    def _graduate_one(self, set_name: SortedSetName, raw: Raw, now: float) -> Outcome:
        try:
            job = decode(raw)
        except PayloadError as exc:
            return "buried" if self.bury(set_name, raw, exc.reason, now) else "gone"
        job["enqueued_at"] = now
        try:
            new_raw = encode(job)
        except (TypeError, ValueError) as exc:  # e.g. a NaN that json.loads accepted
            reason = f"cannot be stored again: {exc}"
            return "buried" if self.bury(set_name, raw, reason, now) else "gone"
        if not self.requeue_entry(set_name, raw, new_raw, job["queue"]):
            return "gone"
        logger.debug("%s entry jid=%s moved to queue %s", set_name, job.get("jid"),
                     job["queue"])
        return "moved"

    def requeue_entry(self, set_name: SortedSetName, raw: Raw, new_raw: str,
                      queue: str) -> bool:
        """Atomically push ``new_raw`` onto ``queue`` and remove ``raw`` from the set.

        Returns False (and writes nothing) when ``raw`` is no longer in the set. Used by
        graduation and by every "retry now" action.
        """
        keys = [self._keys.sorted_set(set_name), self._keys.queue(queue), self._keys.queues]
        args = [raw, new_raw, queue, self._keys.wakeup]
        return bool(self._scripts.run(LUA_PACKAGE, "claim_and_requeue", keys, args))

    def bury(self, set_name: SortedSetName, raw: Raw, reason: str, now: float) -> bool:
        """File an entry that is not a job into dead (wrapped, bytes kept); count a failure.

        Returns False when the entry was no longer in the set.
        """
        wrapper = dumps(unparseable_wrapper(raw, None, reason, now))
        keys = [
            self._keys.sorted_set(set_name),
            self._keys.dead,
            self._keys.stats_failed,
            self._keys.throughput(int(now // 3600)),
        ]
        buried = bool(self._scripts.run(LUA_PACKAGE, "bury_entry", keys,
                                        [raw, wrapper, now, THROUGHPUT_TTL]))
        if buried:
            logger.error("unparseable entry in %s moved to dead: %s (%s)",
                         keys[0], _shown(raw), reason)
        return buried

    def _defer(self, set_key: str, raw: Raw, now: float, cause: BrokerError) -> bool:
        try:
            with translate_errors():
                # XX: never re-add an entry another process has moved meanwhile.
                self._client.zadd(set_key, {_member(raw): now + DEFER_DELAY}, xx=True)
        except BrokerUnavailableError:
            raise
        except BrokerError as exc:
            logger.error("could not move an entry of %s onto its queue (%s), nor defer it "
                         "(%s): %s", set_key, cause, exc, _shown(raw))
            return False
        logger.error("could not move an entry of %s onto its queue (%s); trying again in "
                     "%.0f s: %s", set_key, cause, DEFER_DELAY, _shown(raw))
        return True


def _member(raw: Raw) -> bytes:
    return raw.encode("utf-8") if isinstance(raw, str) else raw


def _shown(raw: Raw) -> str:
    text = as_text(raw)
    return text if len(text) <= _LOGGED_RAW_LIMIT else text[:_LOGGED_RAW_LIMIT] + "..."
