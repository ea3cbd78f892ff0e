"""``broker.extension(LIMITS)``: fleet-wide limiters, each step one atomic operation.

Three kinds (:class:`LimiterSpec`), all judged on the store's own clock, never a client's:

* ``concurrent``: at most ``limit`` holders at once. A holder is one acquisition by one
  process for one job; it carries a lease (``lease`` seconds) that the holding process
  renews, and it is gone when released, when its lease runs out (expired holders are
  purged by the next acquisition), or when its process is declared dead
  (:meth:`LimitStore.release_process`).
* ``window``: at most ``limit`` admissions per ``per`` seconds: a fixed window (counted
  from the epoch in steps of ``per``) or, with ``sliding``, the last ``per`` seconds.
* ``bucket``: a token bucket holding up to ``limit`` (the burst) tokens, refilled at
  ``rate`` tokens a second; each admission takes one.

Every limiter used is also written to a registry (name → spec), so that the fleet's
limiters can be listed with their usage, and every acquisition counts ``acquired`` or
``over`` for its limiter (:class:`LimiterUsage`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from cogworker.core.broker.composite import Extension

LimiterKind = Literal["concurrent", "window", "bucket"]
LIMITER_KINDS: tuple[str, ...] = get_args(LimiterKind)
HOLDER_SEPARATOR = "|"
"""Between the process identity, the jid and the acquisition's token in a holder."""


@dataclass(frozen=True, slots=True)
class LimiterSpec:
    """One limiter: its name, kind and numbers (unused numbers stay 0)."""

    name: str
    kind: LimiterKind
    limit: int
    """``concurrent``: holders at once; ``window``: admissions per window; ``bucket``:
    the burst (tokens the bucket holds)."""
    per: float = 0.0
    """``window``: the window's length in seconds."""
    sliding: bool = False
    rate: float = 0.0
    """``bucket``: tokens added per second."""
    lease: float = 0.0
    """``concurrent``: seconds a holder lives between two renewals."""

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ValueError(f"limiter {self.name!r}: {problem}")

    def problem(self) -> str:
        """What is wrong with these numbers, in words ("" when nothing is)."""
        return limiter_problem(self.name, self.kind, self.limit, per=self.per,
                               rate=self.rate, lease=self.lease)

    def to_json(self) -> str:
        """The registry's stored form."""
        return json.dumps({"kind": self.kind, "limit": self.limit, "per": self.per,
                           "sliding": self.sliding, "rate": self.rate, "lease": self.lease},
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, name: str, text: str) -> LimiterSpec | None:
        """The spec :meth:`to_json` stored, or None for anything else."""
        try:
            data = json.loads(text)
            return cls(name, data["kind"], int(data["limit"]), float(data.get("per", 0)),
                       bool(data.get("sliding", False)), float(data.get("rate", 0)),
                       float(data.get("lease", 0)))
        except (ValueError, TypeError, KeyError):
            return None

    def describe(self) -> str:
        """``concurrent 5 (lease 60 s)``, ``window 10 per 1 s (sliding)``, ``bucket ...``."""
        if self.kind == "concurrent":
            return f"concurrent {self.limit} (lease {self.lease:g} s)"
        if self.kind == "window":
            return (f"window {self.limit} per {self.per:g} s"
                    f"{' (sliding)' if self.sliding else ''}")
        return f"bucket {self.rate:g}/s, burst {self.limit}"


def _positive(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def limiter_problem(name: object, kind: object, limit: object, *, per: object = 0.0,
                    rate: object = 0.0, lease: object = 0.0) -> str:
    """What is wrong with a limiter's numbers, in words ("" when nothing is); ``per``,
    ``rate`` and ``lease`` are checked only for the kind that uses them."""
    if not isinstance(name, str) or not name or any(ch in name for ch in "\n\x00"):
        return f"a limiter needs a non-empty name without newlines, not {name!r}"
    if kind not in LIMITER_KINDS:
        return f"the kind must be one of {', '.join(LIMITER_KINDS)}, not {kind!r}"
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        what = "burst" if kind == "bucket" else "limit"
        return f"the {what} must be a whole number >= 1, not {limit!r}"
    if kind == "window" and not _positive(per):
        return f"per must be a number of seconds > 0, not {per!r}"
    if kind == "bucket" and not _positive(rate):
        return f"rate must be a number of tokens per second > 0, not {rate!r}"
    if kind == "concurrent" and not _positive(lease):
        return f"lease must be a number of seconds > 0, not {lease!r}"
    return ""


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer to one acquisition: admitted or not, and when room is expected."""

    admitted: bool
    retry_after: float | None = None
    """Not admitted: the store's estimate of seconds until room frees (None: no estimate,
    as for a full ``concurrent`` limiter, whose holders end when their jobs do)."""


@dataclass(frozen=True, slots=True)
class Holder:
    """A live holder of a ``concurrent`` limiter."""

    identity: str
    jid: str
    lease_ends: float

    @classmethod
    def parse(cls, member: str, lease_ends: float) -> Holder:
        identity, _, rest = member.partition(HOLDER_SEPARATOR)
        jid = rest.partition(HOLDER_SEPARATOR)[0]
        return cls(identity, jid, lease_ends)


@dataclass(frozen=True, slots=True)
class LimiterUsage:
    """A registered limiter and what it holds now."""

    spec: LimiterSpec
    used: float
    """``concurrent``: live holders; ``window``: admissions in the current window;
    ``bucket``: tokens left (a fraction once refilling)."""
    acquired: int = 0
    """Admissions ever (until the counters are reset)."""
    over: int = 0
    """Refusals ever: each is one over-limit reschedule or raise."""
    holders: tuple[Holder, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (``cogworker limits --json``)."""
        return {"name": self.spec.name, "kind": self.spec.kind, "limit": self.spec.limit,
                "per": self.spec.per, "sliding": self.spec.sliding, "rate": self.spec.rate,
                "lease": self.spec.lease, "used": self.used, "acquired": self.acquired,
                "over": self.over,
                "holders": [{"identity": h.identity, "jid": h.jid, "lease_ends": h.lease_ends}
                            for h in self.holders]}


def holder_member(identity: str, jid: str, token: str) -> str:
    """The stored holder of one acquisition."""
    return HOLDER_SEPARATOR.join((identity, jid, token))


class LimitStore(Protocol):
    """Fleet-wide limiters. Thread-safe; each method one atomic step (one round trip)
    unless it says otherwise; raises the broker's errors."""

    def register(self, specs: Sequence[LimiterSpec]) -> None:
        """Write ``specs`` into the registry (a limiter's spec replaces the one stored)."""
        ...

    def acquire(self, spec: LimiterSpec, holder: str = "") -> Admission:
        """Take room in the limiter. ``concurrent`` needs ``holder`` (see
        :func:`holder_member`) and holds it for ``spec.lease`` seconds, purging expired
        holders first; ``window`` and ``bucket`` ignore it. Counts ``acquired`` or
        ``over``."""
        ...

    def release(self, name: str, holder: str) -> bool:
        """Drop ``holder`` from concurrent limiter ``name``; False when it held nothing."""
        ...

    def renew(self, held: Mapping[str, Sequence[tuple[str, float]]], identity: str) -> int:
        """Extend the leases of process ``identity``'s holders: limiter name →
        ``(holder, lease seconds)`` pairs, each from now. Holders already gone stay gone.
        Returns how many were renewed."""
        ...

    def release_process(self, identity: str) -> int:
        """Drop every holder process ``identity`` has in any limiter (it is dead); returns
        how many went."""
        ...

    def usage(self) -> list[LimiterUsage]:
        """Every registered limiter with its usage, by name (a bounded read: limiters are
        configuration-sized)."""
        ...

    def reset(self, name: str) -> bool:
        """Empty limiter ``name`` (holders, window count or bucket) and zero its counters;
        False when no such limiter is registered."""
        ...


LIMITS: Extension[LimitStore] = Extension("limits", "fleet-wide rate and concurrency limiters")
