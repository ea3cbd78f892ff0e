"""``broker.extension(LIMITS)`` in memory: the Redis store's rules on the broker's clock,
each step under the broker's one lock."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cogworker.core.broker.limits import (
    HOLDER_SEPARATOR,
    Admission,
    Holder,
    LimiterSpec,
    LimiterUsage,
)
from cogworker.testing.memory_broker.state import MemoryState


@dataclass(slots=True)
class _Limiter:
    holders: dict[str, float] = field(default_factory=dict)  # holder -> lease end
    window: int = -1
    count: int = 0
    admitted_at: list[float] = field(default_factory=list)  # sliding window
    tokens: float | None = None
    refilled_at: float = 0.0


class MemoryLimitStore:
    """:class:`cogworker.core.broker.LimitStore` in one memory broker's state."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state
        self._specs: dict[str, LimiterSpec] = {}
        self._limiters: dict[tuple[str, str], _Limiter] = {}
        self._counts: dict[str, list[int]] = {}

    def _limiter(self, spec: LimiterSpec) -> _Limiter:
        state = ("sliding" if spec.sliding else "fixed") if spec.kind == "window" else spec.kind
        return self._limiters.setdefault((spec.name, state), _Limiter())

    def _count(self, name: str, admitted: bool) -> None:
        self._counts.setdefault(name, [0, 0])[0 if admitted else 1] += 1

    def register(self, specs: Sequence[LimiterSpec]) -> None:
        with self._state.lock:
            self._specs.update((spec.name, spec) for spec in specs)

    def acquire(self, spec: LimiterSpec, holder: str = "") -> Admission:
        if spec.kind == "concurrent" and not holder:
            raise ValueError(f"concurrent limiter {spec.name!r} needs a holder to acquire")
        with self._state.lock:
            now, limiter = self._state.now(), self._limiter(spec)
            if spec.kind == "concurrent":
                admission = self._take_slot(spec, limiter, holder, now)
            elif spec.kind == "window":
                admission = self._admit(spec, limiter, now)
            else:
                admission = self._take_token(spec, limiter, now)
            self._count(spec.name, admission.admitted)
            return admission

    @staticmethod
    def _take_slot(spec: LimiterSpec, limiter: _Limiter, holder: str,
                   now: float) -> Admission:
        for expired in [h for h, ends in limiter.holders.items() if ends <= now]:
            del limiter.holders[expired]
        if len(limiter.holders) >= spec.limit:
            return Admission(False)
        limiter.holders[holder] = now + spec.lease
        return Admission(True)

    @staticmethod
    def _admit(spec: LimiterSpec, limiter: _Limiter, now: float) -> Admission:
        if spec.sliding:
            limiter.admitted_at = [at for at in limiter.admitted_at if at > now - spec.per]
            if len(limiter.admitted_at) >= spec.limit:
                return Admission(False, limiter.admitted_at[0] + spec.per - now)
            limiter.admitted_at.append(now)
            return Admission(True)
        window = math.floor(now / spec.per)
        if limiter.window != window:
            limiter.window, limiter.count = window, 0
        if limiter.count >= spec.limit:
            return Admission(False, (window + 1) * spec.per - now)
        limiter.count += 1
        return Admission(True)

    @staticmethod
    def _refilled(spec: LimiterSpec, limiter: _Limiter, now: float) -> float:
        if limiter.tokens is None:
            return float(spec.limit)
        elapsed = max(0.0, now - limiter.refilled_at)
        return min(float(spec.limit), limiter.tokens + elapsed * spec.rate)

    def _take_token(self, spec: LimiterSpec, limiter: _Limiter, now: float) -> Admission:
        tokens = self._refilled(spec, limiter, now)
        admitted = tokens >= 1
        limiter.tokens, limiter.refilled_at = (tokens - 1 if admitted else tokens), now
        if admitted:
            return Admission(True)
        return Admission(False, (1 - tokens) / spec.rate)

    def release(self, name: str, holder: str) -> bool:
        with self._state.lock:
            limiter = self._limiters.get((name, "concurrent"))
            return limiter is not None and limiter.holders.pop(holder, None) is not None

    def renew(self, held: Mapping[str, Sequence[tuple[str, float]]], identity: str) -> int:
        renewed = 0
        with self._state.lock:
            now = self._state.now()
            for name, holders in held.items():
                limiter = self._limiters.get((name, "concurrent"))
                for holder, lease in holders:
                    if limiter is not None and holder in limiter.holders:
                        limiter.holders[holder] = now + lease
                        renewed += 1
        return renewed

    def release_process(self, identity: str) -> int:
        prefix = identity + HOLDER_SEPARATOR
        released = 0
        with self._state.lock:
            for (_, state), limiter in self._limiters.items():
                if state != "concurrent":
                    continue
                for holder in [h for h in limiter.holders if h.startswith(prefix)]:
                    del limiter.holders[holder]
                    released += 1
        return released

    def usage(self) -> list[LimiterUsage]:
        with self._state.lock:
            now = self._state.now()
            return [self._usage_of(spec, now) for _, spec in sorted(self._specs.items())]

    def _usage_of(self, spec: LimiterSpec, now: float) -> LimiterUsage:
        limiter = self._limiter(spec)
        acquired, over = self._counts.get(spec.name, [0, 0])
        holders: tuple[Holder, ...] = ()
        used: float
        if spec.kind == "concurrent":
            holders = tuple(Holder.parse(holder, ends)
                            for holder, ends in sorted(limiter.holders.items(),
                                                       key=lambda item: item[1])
                            if ends > now)
            used = len(holders)
        elif spec.kind == "window" and spec.sliding:
            used = sum(1 for at in limiter.admitted_at if at > now - spec.per)
        elif spec.kind == "window":
            used = limiter.count if limiter.window == math.floor(now / spec.per) else 0
        else:
            used = self._refilled(spec, limiter, now)
        return LimiterUsage(spec, used, acquired, over, holders)

    def reset(self, name: str) -> bool:
        with self._state.lock:
            if name not in self._specs:
                return False
            for key in [key for key in self._limiters if key[0] == name]:
                del self._limiters[key]
            self._counts.pop(name, None)
            return True
