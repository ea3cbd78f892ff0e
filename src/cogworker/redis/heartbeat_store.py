"""The Redis side of a process's heartbeat: presence, registries, clean removal.

Part of :class:`~cogworker.redis.process_registry.RedisProcessRegistry` (``broker.processes``).

Presence (the ``process:<identity>`` hash and its TTL) is the one write a beat cannot do
without: it is written in one transaction and its failure fails the beat. The secondary
records follow in one pipeline; each of them failing for any reason other than Redis being
unavailable is logged and the beat still counts.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis
from redis.exceptions import RedisError

from cogworker.core.errors import BrokerError, BrokerUnavailableError
from cogworker.redis.errors import is_unavailable, translate, translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.lock_store import whole_seconds
from cogworker.redis.scripts import Scripts

logger = logging.getLogger(__name__)

LUA_PACKAGE = "cogworker.redis"
LIVE_QUEUES_KEPT = 86_400  # live_queues members older than this are pruned on each beat


def redis_now(client: redis.Redis) -> int:
    """Redis's clock in whole epoch seconds (``TIME``); the local clock if TIME is refused.

    Raises ``BrokerUnavailableError`` when Redis cannot be reached.
    """
    try:
        with translate_errors():
            seconds, _micros = client.time()
        return int(seconds)
    except BrokerUnavailableError:
        raise
    except BrokerError as exc:
        logger.warning("Redis refused TIME (%s); using the local clock for the beat", exc)
        return int(time.time())


class HeartbeatStore:
    """Writes and removes one client's view of live processes."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def beat(self, identity: str, *, info: Mapping[str, Any], busy: int, quiet: bool,
             queues: Sequence[str], ttl: float, holds_jobs: bool) -> None:
        """One beat (see ``ProcessRegistry.beat``). Raises only when presence failed or
        Redis became unavailable."""
        seconds = whole_seconds(ttl)
        presence = self._keys.process(identity)
        record = json.dumps(dict(info), separators=(",", ":"), ensure_ascii=False)
        with translate_errors():
            pipe = self._client.pipeline(transaction=True)
            pipe.hset(presence, mapping={"info": record, "busy": busy,
                                         "quiet": "true" if quiet else "false"})
            pipe.expire(presence, seconds)
            pipe.execute()
        self._write_secondary(identity, queues, seconds, holds_jobs, redis_now(self._client))

    def _write_secondary(self, identity: str, queues: Sequence[str], seconds: int,
                         holds_jobs: bool, now: int) -> None:
        keys = self._keys
        distinct = list(dict.fromkeys(queues))
        pipe = self._client.pipeline(transaction=False)
        steps = ["register the process"]
        pipe.sadd(keys.processes, identity)
        if distinct:
            steps += ["register its queues", "mark its queues live"]
            pipe.sadd(keys.queues, *distinct)
            pipe.zadd(keys.live_queues, dict.fromkeys(distinct, now))
        steps += ["prune live queues", "refresh the workers hash TTL"]
        pipe.zremrangebyscore(keys.live_queues, "-inf", f"({now - LIVE_QUEUES_KEPT}")
        pipe.expire(keys.workers(identity), seconds)
        if holds_jobs:
            steps += ["register the in-progress list", "record the last beat"]
            pipe.sadd(keys.inprogress_identities, identity)
            pipe.hset(keys.last_beat, identity, now)
        with translate_errors():
            results = pipe.execute(raise_on_error=False)
        for step, result in zip(steps, results, strict=True):
            if not isinstance(result, Exception):
                continue
            if isinstance(result, RedisError) and is_unavailable(result):
                raise translate(result) from result
            logger.error("heartbeat of %s could not %s: %s: %s (the beat still counts)",
                         identity, step, type(result).__name__, result)

    def remove(self, identity: str) -> bool:
        """Clean shutdown: drop presence, workers hash and registry entries.

        The in-progress registry entry and last beat are kept while the process's
        in-progress list still holds jobs. Returns True when they were removed too.
        """
        keys = self._keys
        script_keys = [
            keys.process(identity),
            keys.workers(identity),
            keys.processes,
            keys.inprogress(identity),
            keys.inprogress_identities,
            keys.last_beat,
        ]
        return bool(self._scripts.run(LUA_PACKAGE, "remove_process", script_keys, [identity]))
