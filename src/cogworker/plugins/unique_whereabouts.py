"""Where a job is now, by jid: running, queued, retrying, scheduled, dead, or nowhere.

One pass reads every place a job can be, in chunks, and stops as soon as every wanted jid
was seen: in-progress lists and workers hashes (running), queue lists (queued), then the
retry, schedule and dead sets. Nothing is atomic across places: a job moving while the pass
reads can be missed, so callers that act on "nowhere" look a second time first.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import redis

from cogworker.core.errors import BrokerError, BrokerUnavailableError
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text

logger = logging.getLogger("cogworker.unique")

CHUNK = 1000
_JID_RE = re.compile(r'"jid":"([^"\\]*)"')
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")

RUNNING, QUEUED, RETRYING, SCHEDULED, DEAD, NOWHERE = (
    "running", "queued", "retrying", "scheduled", "dead", "nowhere")


@dataclass(frozen=True, slots=True)
class Sighting:
    """Where a job was seen, and its name there."""

    where: str
    job_class: str


def glob_escape(text: str) -> str:
    """``text`` with SCAN/ZSCAN glob characters escaped."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def _payload_of(raw: str, nested: bool) -> dict[str, Any] | None:
    try:
        item = json.loads(raw)
    except ValueError:
        return None
    if nested and isinstance(item, dict):  # a workers-hash entry {queue, payload, run_at}
        item = item.get("payload")
        if isinstance(item, str):
            return _payload_of(item, nested=False)
    return item if isinstance(item, dict) else None


class JobLocator:
    """Finds jobs by jid in one namespace; every read goes through ``translate_errors``."""

    def __init__(self, client: redis.Redis, keys: KeySchema, extra_queues: Iterable[str] = ()):
        self._client = client
        self._keys = keys
        self._extra_queues = tuple(extra_queues)

    def locate(self, jids: Iterable[str]) -> dict[str, Sighting]:
        """Each wanted jid that exists somewhere → where (the first place found wins)."""
        wanted = set(jids)
        found: dict[str, Sighting] = {}
        if not wanted:
            return found
        for where, raws, nested in self._places(wanted):
            try:
                for raw in raws:
                    self._note(as_text(raw), nested, where, wanted, found)
                    if len(found) == len(wanted):
                        return found
            except BrokerUnavailableError:
                raise
            except BrokerError as exc:  # e.g. a key of the wrong type: the others still count
                logger.warning("skipped a %s place while looking for jobs: %s", where, exc)
        return found

    @staticmethod
    def _note(raw: str, nested: bool, where: str, wanted: set[str],
              found: dict[str, Sighting]) -> None:
        if not any(jid in wanted and jid not in found for jid in _JID_RE.findall(raw)):
            return
        payload = _payload_of(raw, nested)
        jid = payload.get("jid") if payload is not None else None
        if payload is not None and isinstance(jid, str) and jid in wanted and jid not in found:
            found[jid] = Sighting(where, str(payload.get("class", "?")))

    def _places(self, wanted: set[str]) -> Iterator[tuple[str, Iterator[bytes | str], bool]]:
        keys = self._keys
        for identity in self._members(keys.inprogress_identities):
            yield RUNNING, self._list(keys.inprogress(identity)), False
        for identity in self._members(keys.processes):
            yield RUNNING, self._hash_values(keys.workers(identity)), True
        queues = sorted(set(self._members(keys.queues)) | set(self._extra_queues))
        for queue in queues:
            yield QUEUED, self._list(keys.queue(queue)), False
        pattern = None
        if len(wanted) == 1:
            pattern = "*" + glob_escape(f'"jid":{json.dumps(next(iter(wanted)))}') + "*"
        for where, key in ((RETRYING, keys.retry), (SCHEDULED, keys.schedule),
                           (DEAD, keys.dead)):
            yield where, self._sorted_set(key, pattern), False

    def _members(self, key: str) -> list[str]:
        with translate_errors():
            members: set[bytes | str] = self._client.smembers(key)
        return sorted(as_text(member) for member in members)

    def _list(self, key: str) -> Iterator[bytes | str]:
        start = 0
        while True:
            with translate_errors():
                chunk: list[bytes | str] = self._client.lrange(key, start, start + CHUNK - 1)
            yield from chunk
            if len(chunk) < CHUNK:
                return
            start += CHUNK

    def _hash_values(self, key: str) -> Iterator[bytes | str]:
        with translate_errors():
            values: list[bytes | str] = self._client.hvals(key)
        yield from values

    def _sorted_set(self, key: str, pattern: str | None) -> Iterator[bytes | str]:
        cursor = 0
        while True:
            with translate_errors():
                reply_cursor, pairs = self._client.zscan(key, cursor, match=pattern, count=CHUNK)
            for member, _score in pairs:
                yield cast("bytes | str", member)
            cursor = int(reply_cursor)
            if cursor == 0:
                return
