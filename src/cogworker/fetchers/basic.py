"""The ``basic`` fetch strategy: ``BRPOP`` over every queue, nothing kept in progress.

Fast and works on any Redis, but a job popped by a process that then dies (SIGKILL,
out-of-memory, power loss) is lost: it exists only in that process's memory. Use the
``reliable`` strategy when that matters. ``docs/explanation/fetching.md`` compares them.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol, cast

from cogworker.core.broker import SortedSetName, UnitOfWork
from cogworker.core.errors import BrokerError
from cogworker.core.markers import hookimpl
from cogworker.core.payload import dumps
from cogworker.core.settings import Settings
from cogworker.fetchers.weighted import ALL_PAUSED_PAUSE, fetch_order, unpaused
from cogworker.redis.errors import translate_errors
from cogworker.redis.quarantine import is_wrong_type, quarantine_wrong_types
from cogworker.redis.requeue import RedisBackend, requeue_target, text, wire

logger = logging.getLogger(__name__)

PACKAGE = "cogworker.fetchers"
DEFAULT_QUEUED_TTL = 86_400
_BACKEND_MEMBERS = ("client", "keys", "scripts", "paused_queues", "server_version",
                    "subscribe_wakeups")


class AppLike(Protocol):
    """What the fetcher hooks read of the app."""

    @property
    def settings(self) -> Settings: ...

    @property
    def identity(self) -> str: ...


def as_redis_backend(broker: object) -> RedisBackend | None:
    """``broker`` when it is Redis-backed (see :class:`RedisBackend`), else None."""
    if all(hasattr(broker, name) for name in _BACKEND_MEMBERS):
        return cast(RedisBackend, broker)
    return None


def queued_ttl(settings: Settings) -> int:
    """Whole seconds a requeued cron run keeps its running lock (``SET EX`` wants ints)."""
    return math.ceil(settings.unique_lock_ttl)


def blocking_seconds(timeout: float) -> int | float:
    """A timeout for BRPOP/BLMOVE: never 0 (which blocks forever), whole when it can be
    (servers before 6.0 accept only whole seconds)."""
    seconds = max(timeout, 0.01)
    return int(seconds) if float(seconds).is_integer() else seconds


def canonical(payloads: Iterable[str]) -> Counter[str]:
    """Payloads re-encoded the way :func:`dumps` writes them, to compare by content."""
    found: Counter[str] = Counter()
    for raw in payloads:
        try:
            found[dumps(json.loads(raw))] += 1
        except Exception:  # not JSON, or nested too deep to parse: compare the bytes
            found[raw] += 1
    return found


class BasicFetcher:
    """Pops jobs with one ``BRPOP`` over every queue: no polling, no in-progress list."""

    name = "basic"
    reliable = False

    def __init__(self, backend: RedisBackend, identity: str, *,
                 queued_ttl: int = DEFAULT_QUEUED_TTL,
                 rng: random.Random | None = None) -> None:
        self._backend = backend
        self._keys = backend.keys
        self._client = backend.client
        self.identity = identity
        self.queued_ttl = queued_ttl
        self._rng = rng or random.Random()
        self._closed = threading.Event()

    def fetch(self, queues: Sequence[str], timeout: float, max_jobs: int = 1) -> list[UnitOfWork]:
        """Pop one job, blocking up to ``timeout`` on all queues at once (``max_jobs`` is
        ignored: a popped job only lives in memory, so we never take more than one). On
        ``WRONGTYPE`` the keys of the wrong type are quarantined and the fetch runs again."""
        try:
            return self._pop(queues, timeout)
        except BrokerError as exc:
            expected = {self._keys.paused_queues: "set",
                        **{self._keys.queue(queue): "list" for queue in queues}}
            if not is_wrong_type(exc) or not quarantine_wrong_types(self._backend, expected):
                raise
        return self._pop(queues, timeout)

    def _pop(self, queues: Sequence[str], timeout: float) -> list[UnitOfWork]:
        order = fetch_order(unpaused(queues, self._backend.paused_queues()), self._rng)
        if not order or self._closed.is_set():
            self._closed.wait(min(timeout, ALL_PAUSED_PAUSE))
            return []
        with translate_errors():
            reply = self._client.brpop([self._keys.queue(q) for q in order],
                                       timeout=blocking_seconds(timeout))
        if reply is None:
            return []
        key, raw = reply
        return [UnitOfWork(self._keys.queue_name(text(key)), text(raw))]

    def acknowledge(self, works: Sequence[UnitOfWork]) -> None:
        """Nothing to do: a popped job already left Redis."""

    def give_back(self, work: UnitOfWork) -> bool:
        """RPUSH the job back onto its queue (the end the next fetch pops), then wake a
        worker; both in one round trip, the wake-up best-effort (an ACL may refuse it)."""
        pipe = self._client.pipeline(transaction=False)
        pipe.rpush(self._keys.queue(work.queue), wire(work.raw))
        pipe.publish(self._keys.wakeup, work.queue)
        with translate_errors():
            pushed, _published = pipe.execute(raise_on_error=False)
            if isinstance(pushed, Exception):
                raise pushed
        return True

    def interrupt(self, work: UnitOfWork, set_name: SortedSetName, score: float,
                  record: str) -> bool:
        """ZADD the record into retry or dead (nothing is held to drop)."""
        with translate_errors():
            self._client.zadd(self._keys.sorted_set(set_name), {wire(record): score})
        return True

    def in_progress(self) -> list[str]:
        """Nothing is held in Redis by a basic fetcher."""
        return []

    def park_unsettled(self, raw: str, record_json: str) -> bool:
        """Hand a failure this process could not file to any live process (RPUSH)."""
        with translate_errors():
            self._client.rpush(self._keys.unsettled, wire(record_json))
        return True

    def requeue_unfinished(self, finished: Sequence[str], keep: Sequence[str]) -> int:
        """At shutdown: requeue every job this process's workers hash says is running,
        except those in ``finished`` or ``keep`` (compared by content). Each requeue is
        atomic (and re-takes a cron job's running lock); unreadable entries are logged and
        skipped. Returns how many were requeued."""
        skip = canonical(finished) + canonical(keep)
        with translate_errors():
            entries: list[bytes | str] = self._client.hvals(self._keys.workers(self.identity))
        requeued = 0
        for entry in entries:
            payload = self._readable_payload(text(entry))
            if payload is None:
                continue
            if skip[payload] > 0:
                skip[payload] -= 1
                continue
            self._requeue_payload(payload)
            requeued += 1
        return requeued

    def _readable_payload(self, entry: str) -> str | None:
        """The job of a workers-hash entry, encoded as :func:`dumps` writes it; None (and a
        warning) for an entry that is not ``{"payload": <job object>}``."""
        try:
            job = json.loads(entry)["payload"]
            if isinstance(job, dict):
                return dumps(job)
        except Exception:  # not JSON, no payload, or nested too deep to parse or encode
            pass
        logger.warning("skipped an unreadable entry of %s at shutdown: %.200s",
                       self._keys.workers(self.identity), entry)
        return None

    def _requeue_payload(self, payload: str) -> None:
        target = requeue_target(self._keys, payload)
        self._backend.scripts.run(
            PACKAGE, "requeue_payload",
            keys=[target.queue_key, *target.lock_keys()],
            args=[wire(payload), target.jid, self.queued_ttl, self._keys.wakeup, target.queue],
        )

    def close(self) -> None:
        """Wake a fetch waiting on paused queues; idempotent."""
        self._closed.set()


@hookimpl(trylast=True)  # type: ignore[untyped-decorator, unused-ignore]
def cogworker_make_fetcher(app: AppLike, broker: object) -> BasicFetcher | None:
    """The basic fetcher on a Redis broker; None for any other broker."""
    backend = as_redis_backend(broker)
    if backend is None:
        return None
    return BasicFetcher(backend, app.identity, queued_ttl=queued_ttl(app.settings))
