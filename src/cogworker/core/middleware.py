"""Client and server middleware: the Protocols and the chain that runs them.

A middleware receives the call and a continuation. Calling the continuation runs the rest of
the chain and finally the innermost step; not calling it stops there:

* client chain: the job is not stored (``push`` still returns its jid);
* server chain: ``perform`` does not run and the job counts as processed.

The first middleware in the list is the outermost wrapper. A server middleware that acts only
on jobs carrying a field of its own (a batch's ``bid``, a workflow step's marker) says so
with :func:`for_jobs_with`, and every other job runs without it: a job that does not use a
feature pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from cogworker.core.markers import PAYLOAD_KEYS
from cogworker.core.payload import Payload

if TYPE_CHECKING:
    from cogworker.core.job_definition import JobDefinition
    from cogworker.core.plugin_host import PluginHost

T = TypeVar("T")


@dataclass(slots=True)
class PushContext:
    """One push on its way through the client chain.

    ``bulk``: part of a ``push_bulk``, whose jobs are stored together after every one of
    them went through the chain (so ``call_next()`` returning means "accepted", not yet
    "stored"): a middleware that writes per push should gather such pushes instead.
    """

    app: PluginHost
    job: Payload
    queue: str
    scheduled_at: float | None = None
    bulk: bool = False


@dataclass(slots=True)
class JobContext:
    """One job on its way through the server chain.

    ``instance`` is the job object (None when the name could not be resolved: the
    resolution error is then raised inside the chain so middleware still sees it).
    """

    app: PluginHost
    job: Payload
    queue: str
    raw: str
    definition: JobDefinition | None
    instance: Any = None
    extras: dict[str, Any] = field(default_factory=dict)


class ClientMiddleware(Protocol):
    """Wraps a push. Return ``call_next()``'s result to let it through."""

    def __call__(self, ctx: PushContext, call_next: Callable[[], str | None]) -> str | None: ...


class ServerMiddleware(Protocol):
    """Wraps a job's run. Call ``call_next()`` to run the job (and inner middleware)."""

    def __call__(self, ctx: JobContext, call_next: Callable[[], object]) -> object: ...


class StartGate(Protocol):
    """Checks a fetched job before it starts; True when it dropped the job (see the
    ``cogworker_start_gate`` hook)."""

    def __call__(self, job: Payload) -> bool: ...


C = TypeVar("C")
M = TypeVar("M")

def for_jobs_with(*keys: str) -> Callable[[M], M]:
    """Mark a server middleware (a function or an object) as acting only on jobs whose
    payload holds one of ``keys``, passing every other job straight on: the worker leaves
    it out of those jobs' chains. Decided on the payload as fetched, before any middleware
    runs (a middleware adding such a key for an inner one is not seen)."""
    if not keys:
        raise ValueError("for_jobs_with needs at least one payload key")

    def mark(middleware: M) -> M:
        setattr(middleware, PAYLOAD_KEYS, frozenset(keys))
        return middleware

    return mark


class ServerChain:
    """A server chain, and the shorter one that a job whose payload holds none of the keys
    of its :func:`for_jobs_with` middleware runs, made once."""

    def __init__(self, chain: Sequence[ServerMiddleware]) -> None:
        self.full = list(chain)
        self._keys: list[frozenset[str] | None] = [getattr(middleware, PAYLOAD_KEYS, None)
                                                   for middleware in self.full]
        self._any_key = frozenset().union(*(keys for keys in self._keys if keys))
        self.plain = [middleware for middleware, keys in zip(self.full, self._keys,
                                                             strict=True) if not keys]

    def for_job(self, job: Collection[str]) -> list[ServerMiddleware]:
        """The middleware ``job`` (its payload) runs through, outermost first."""
        if self._any_key.isdisjoint(job):
            return self.plain
        return [middleware for middleware, keys in zip(self.full, self._keys, strict=True)
                if not keys or not keys.isdisjoint(job)]


def run_chain(
    chain: Sequence[Callable[[C, Callable[[], T]], T]],
    ctx: C,
    innermost: Callable[[], T],
) -> T:
    """Run ``chain`` around ``innermost``; element 0 is the outermost wrapper.

    Each continuation is a :func:`functools.partial` of the next middleware, built inside
    out (a job runs this: no closure or index arithmetic per step)."""
    call_next: Callable[[], T] = innermost
    for middleware in reversed(chain):
        call_next = partial(middleware, ctx, call_next)
    return call_next()
