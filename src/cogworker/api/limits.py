"""The fleet's limiters (``limits`` plugin): each with its usage, and resetting one.

Built from an App or a broker, or reached as ``app.limits``::

    for usage in app.limits.all():
        print(usage.spec.name, usage.spec.describe(), usage.used, usage.over)
        for holder in usage.holders:          # concurrent limiters
            print("  ", holder.identity, holder.jid, holder.lease_ends)
    app.limits.reset("stripe")

A limiter is listed once some process used it (the plugin writes it to the broker's
registry on first use in each process).
"""

from __future__ import annotations

from cogworker.api._source import Source, resolve_broker
from cogworker.core.broker import LIMITS, LimiterUsage, LimitStore
from cogworker.core.errors import CogworkerError


class UnknownLimiterError(CogworkerError, LookupError):
    """No limiter of that name is registered."""


class Limits:
    """Read and reset the fleet's limiters."""

    def __init__(self, source: Source) -> None:
        self._broker = resolve_broker(source)

    @property
    def store(self) -> LimitStore:
        store = self._broker.extension(LIMITS)
        if store is None:
            raise CogworkerError(f"the {self._broker.name} broker keeps no limiters (no "
                                 f"{LIMITS.name!r} facet)")
        return store

    def all(self) -> list[LimiterUsage]:
        """Every registered limiter with its usage, by name."""
        return self.store.usage()

    def get(self, name: str) -> LimiterUsage:
        """One limiter's usage; :class:`UnknownLimiterError` when there is none."""
        for usage in self.all():
            if usage.spec.name == name:
                return usage
        raise self._unknown(name)

    def reset(self, name: str) -> None:
        """Empty limiter ``name`` (its holders, window count or bucket) and zero its
        counters; :class:`UnknownLimiterError` when there is none. Jobs holding one of its
        slots still run, and release nothing when they end."""
        if not self.store.reset(name):
            raise self._unknown(name)

    def _unknown(self, name: str) -> UnknownLimiterError:
        names = [usage.spec.name for usage in self.store.usage()]
        known = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "") or "none yet"
        return UnknownLimiterError(
            f"no limiter named {name!r} is registered (known: {known}); a limiter is "
            "registered when a worker first uses it")
