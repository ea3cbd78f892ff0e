"""``Broker.locate`` on Redis: where a few jobs are, one bounded step at a time.

Running jobs (bounded by the fleet's threads) are read first and whole: the in-progress
lists of the registered holders and the workers hashes of the registered processes. Then
the queues (by name), retry, schedule and dead follow, a window per script call
(``match_jids.lua``, which sends back only the entries holding a wanted jid): each step
looks through one window of one place. The cursor is ``<place>.<position>`` within that
order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import redis

from cogworker.core.broker import LocatePage, Sighting, Whereabouts
from cogworker.core.errors import BrokerError, BrokerUnavailableError
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.process_registry import work_from_entry
from cogworker.redis.replies import text
from cogworker.redis.requeue_keys import parse_job
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)

LUA_PACKAGE = "cogworker.redis"
Place = tuple[Whereabouts, str, str, str]
"""(where, place name, key, 'list' or 'zset')."""


def _sighting(job: dict[str, Any] | None, wanted: set[str], where: Whereabouts,
              place: str) -> tuple[str, Sighting] | None:
    jid = job.get("jid") if job is not None else None
    if job is None or not isinstance(jid, str) or jid not in wanted:
        return None
    job_class = job.get("class")
    return jid, Sighting(where, place, job_class if isinstance(job_class, str) else "?")


class Locator:
    """Finds jobs by jid for one client and key schema."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def locate(self, jids: Iterable[str], cursor: str | None, window: int) -> LocatePage:
        if window < 1:
            raise ValueError(f"a locate step looks at least at 1 entry, not {window}")
        resume = _parse(cursor)
        wanted = set(jids)
        if not wanted:
            return LocatePage({}, None)
        found = self._running(wanted) if resume is None else {}
        place, position = resume or (0, 0)
        places = self._places()
        if place < len(places) and len(found) < len(wanted):  # one window of one place
            following, _examined = self._look(places[place], position, window,
                                               wanted - found.keys(), found)
            place, position = (place, following) if following is not None else (place + 1, 0)
        done = place >= len(places) or len(found) == len(wanted)
        return LocatePage(found, None if done else f"{place}.{position}")

    def _look(self, place: Place, position: int, window: int, missing: set[str],
              found: dict[str, Sighting]) -> tuple[int | None, int]:
        """One window of one place: where to go on in it (None: its end), and how many
        entries were looked at."""
        where, name, key, kind = place
        try:
            reply = self._scripts.run(LUA_PACKAGE, "match_jids", keys=[key],
                                      args=[kind, position, window, *sorted(missing)])
        except BrokerUnavailableError:
            raise
        except BrokerError as exc:  # a key of the wrong type: the other places still count
            logger.warning("skipped %s %s while looking for jobs: %s", where, name, exc)
            return None, 0
        for raw in reply[2:]:
            seen = _sighting(parse_job(text(raw)), missing, where, name)
            if seen is not None:
                found.setdefault(*seen)
        following = int(reply[0])
        return (following if following >= 0 else None), int(reply[1])

    def _places(self) -> list[Place]:
        keys = self._keys
        with translate_errors():
            members: set[Any] = self._client.smembers(keys.queues)
        queues = sorted(text(member) for member in members)
        places: list[Place] = [("queued", queue, keys.queue(queue), "list") for queue in queues]
        places += [("retrying", "retry", keys.retry, "zset"),
                   ("scheduled", "schedule", keys.schedule, "zset"),
                   ("dead", "dead", keys.dead, "zset")]
        return places

    def _running(self, wanted: set[str]) -> dict[str, Sighting]:
        """Held lists, then workers hashes: bounded by the fleet's threads, read whole."""
        keys = self._keys
        with translate_errors():
            holders = sorted(text(m) for m in self._client.smembers(keys.inprogress_identities))
            processes = sorted(text(m) for m in self._client.smembers(keys.processes))
        pipe = self._client.pipeline(transaction=False)
        for holder in holders:
            pipe.lrange(keys.inprogress(holder), 0, -1)
        for identity in processes:
            pipe.hvals(keys.workers(identity))
        with translate_errors():
            replies: list[Any] = pipe.execute(raise_on_error=False)
        found: dict[str, Sighting] = {}
        for holder, entries in zip(holders, replies, strict=False):
            for raw in [] if isinstance(entries, Exception) else entries:
                seen = _sighting(parse_job(text(raw)), wanted, "running", holder)
                if seen is not None:
                    found.setdefault(*seen)
        for identity, entries in zip(processes, replies[len(holders):], strict=True):
            for raw in [] if isinstance(entries, Exception) else entries:
                work = work_from_entry(text(raw))
                seen = _sighting(dict(work.payload) if work else None, wanted, "running",
                                 identity)
                if seen is not None:
                    found.setdefault(*seen)
        return found


def _parse(cursor: str | None) -> tuple[int, int] | None:
    if cursor is None:
        return None
    try:
        place, position = (int(part) for part in cursor.split("."))
    except ValueError:
        raise ValueError(f"{cursor!r} is not a locate cursor; pass the cursor a locate "
                         "returned, or None to start again") from None
    if place < 0 or position < 0:
        raise ValueError(f"{cursor!r} is not a locate cursor; pass the cursor a locate "
                         "returned, or None to start again")
    return place, position



