"""``broker.extension(LIMITS)`` on Redis: limiters as Lua steps on Redis's clock.

Keys (all under the namespace, so one hash slot in cluster mode):

* ``limiters`` — hash, name → spec JSON (the registry);
* ``limiter:<name>:concurrent`` — zset, holder → lease end (ms); ``limiter:<name>:fixed``
  — hash ``{w, n}``; ``limiter:<name>:sliding`` — zset of admission times;
  ``limiter:<name>:bucket`` — hash ``{t, ts}``;
* ``limiter_counts`` — hash ``<name>|acquired`` / ``<name>|over``;
* ``limiter_holds:<identity>`` — set of ``<name>\\n<holder>``, one process's holders.

An acquisition is one script (``limiter_concurrent``, ``limiter_window``,
``limiter_bucket``): 4 to 7 commands inside it. Renewing all of a process's holders is one
script; releasing one holder, one script (``limiter_release``); a dead process's holders,
one read and one MULTI.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import redis

from cogworker.core.broker.limits import Admission, Holder, LimiterSpec, LimiterUsage
from cogworker.redis.errors import translate_errors
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from cogworker.redis.scripts import KeyOrArg, Scripts

PACKAGE = "cogworker.redis"


def state_name(spec: LimiterSpec) -> str:
    """The suffix of a limiter's state key (see :meth:`KeySchema.limiter`)."""
    if spec.kind == "window":
        return "sliding" if spec.sliding else "fixed"
    return spec.kind


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _admission(reply: Any) -> Admission:
    admitted, wait_ms = int(reply[0]), int(reply[1])
    return Admission(admitted == 1, None if wait_ms < 0 else wait_ms / 1000)


class RedisLimitStore:
    """:class:`cogworker.core.broker.LimitStore` on one client, key schema and scripts."""

    def __init__(self, client: redis.Redis, keys: KeySchema, scripts: Scripts) -> None:
        self._client = client
        self._keys = keys
        self._scripts = scripts

    def register(self, specs: Sequence[LimiterSpec]) -> None:
        if not specs:
            return
        mapping: dict[Any, Any] = {spec.name: spec.to_json() for spec in specs}
        with translate_errors():
            self._client.hset(self._keys.limiters, mapping=mapping)

    def acquire(self, spec: LimiterSpec, holder: str = "") -> Admission:
        keys, name = self._keys, spec.name
        state = keys.limiter(name, state_name(spec))
        if spec.kind == "concurrent":
            if not holder:
                raise ValueError(f"concurrent limiter {name!r} needs a holder to acquire")
            identity = holder.partition("|")[0]
            reply = self._run("limiter_concurrent",
                              [state, keys.limiter_holds(identity), keys.limiter_counts],
                              [spec.limit, _ms(spec.lease), holder, name])
        elif spec.kind == "window":
            reply = self._run("limiter_window", [state, keys.limiter_counts],
                              [spec.limit, _ms(spec.per), "1" if spec.sliding else "0", name,
                               secrets.token_hex(4)])
        else:
            reply = self._run("limiter_bucket", [state, keys.limiter_counts],
                              [spec.limit, repr(float(spec.rate)), name])
        return _admission(reply)

    def release(self, name: str, holder: str) -> bool:
        identity = holder.partition("|")[0]
        removed = self._run("limiter_release", [self._keys.limiter(name, "concurrent"),
                                                self._keys.limiter_holds(identity)],
                            [holder, f"{name}\n{holder}"])
        return int(removed) == 1

    def renew(self, held: Mapping[str, Sequence[tuple[str, float]]], identity: str) -> int:
        keys: list[KeyOrArg] = [self._keys.limiter_holds(identity)]
        args: list[KeyOrArg] = [0]
        longest = 0.0
        for name, holders in held.items():
            for holder, lease in holders:
                keys.append(self._keys.limiter(name, "concurrent"))
                args.extend((holder, _ms(lease)))
                longest = max(longest, lease)
        if len(keys) == 1:
            return 0
        args[0] = _ms(longest)
        return int(self._run("limiter_renew", keys, args))

    def release_process(self, identity: str) -> int:
        holds_key = self._keys.limiter_holds(identity)
        with translate_errors():
            entries = [as_text(entry) for entry in self._client.smembers(holds_key)]
        pipe = self._client.pipeline(transaction=True)
        for entry in entries:
            name, _, holder = entry.partition("\n")
            pipe.zrem(self._keys.limiter(name, "concurrent"), holder)
        pipe.delete(holds_key)
        with translate_errors():
            replies = pipe.execute()
        return sum(int(removed) for removed in replies[:-1])

    def usage(self) -> list[LimiterUsage]:
        with translate_errors():
            registry = self._client.hgetall(self._keys.limiters)
            seconds, micros = self._client.time()
            now_ms = int(seconds) * 1000 + int(micros) // 1000
            specs = [spec for name, text in sorted((as_text(k), as_text(v))
                                                   for k, v in registry.items())
                     if (spec := LimiterSpec.from_json(name, text)) is not None]
            pipe = self._client.pipeline(transaction=False)
            pipe.hgetall(self._keys.limiter_counts)
            for spec in specs:
                self._queue_read(pipe, spec, now_ms)
            replies = pipe.execute()
        counts = {as_text(k): int(v) for k, v in replies[0].items()}
        return [self._usage_of(spec, reply, now_ms, counts)
                for spec, reply in zip(specs, replies[1:], strict=True)]

    def _queue_read(self, pipe: redis.client.Pipeline, spec: LimiterSpec,
                    now_ms: int) -> None:
        key = self._keys.limiter(spec.name, state_name(spec))
        if spec.kind == "concurrent":  # live holders only: at most the limit of them
            pipe.zrangebyscore(key, f"({now_ms}", "+inf", withscores=True)
        elif spec.kind == "window" and spec.sliding:
            pipe.zcount(key, f"({now_ms - _ms(spec.per)}", "+inf")
        elif spec.kind == "window":
            pipe.hmget(key, ["w", "n"])
        else:
            pipe.hmget(key, ["t", "ts"])

    @staticmethod
    def _usage_of(spec: LimiterSpec, reply: Any, now_ms: int,
                  counts: Mapping[str, int]) -> LimiterUsage:
        acquired = counts.get(f"{spec.name}|acquired", 0)
        over = counts.get(f"{spec.name}|over", 0)
        holders: tuple[Holder, ...] = ()
        used: float
        if spec.kind == "concurrent":
            assert isinstance(reply, list)
            holders = tuple(Holder.parse(as_text(member), float(score) / 1000)
                            for member, score in reply)
            used = len(holders)
        elif spec.kind == "window" and spec.sliding:
            used = int(reply)
        elif spec.kind == "window":
            assert isinstance(reply, list)
            window, count = reply
            current = window is not None and int(window) == now_ms // _ms(spec.per)
            used = int(count or 0) if current else 0
        else:
            assert isinstance(reply, list)
            tokens, stamp = reply
            used = float(spec.limit)
            if tokens is not None and stamp is not None:
                refill = max(0, now_ms - int(stamp)) * spec.rate / 1000
                used = min(float(spec.limit), float(tokens) + refill)
        return LimiterUsage(spec, used, acquired, over, holders)

    def reset(self, name: str) -> bool:
        with translate_errors():
            text = self._client.hget(self._keys.limiters, name)
        spec = None if text is None else LimiterSpec.from_json(name, as_text(text))
        if spec is None:
            return False
        pipe = self._client.pipeline(transaction=True)
        pipe.delete(self._keys.limiter(name, state_name(spec)))
        pipe.hdel(self._keys.limiter_counts, f"{name}|acquired", f"{name}|over")
        with translate_errors():
            pipe.execute()
        return True

    def _run(self, script: str, keys: Sequence[KeyOrArg], args: Sequence[KeyOrArg]) -> Any:
        return self._scripts.run(PACKAGE, script, keys, args)
