"""``app.limiter``: limiters as written in code, declared on a job or used inline.

``app.limiter.concurrent("stripe", 5)`` (and ``window``, ``bucket``) is a :class:`Limit`:
a name, or a ``key`` function of the job's arguments that names the limiter per call
(``key=lambda customer_id, *_: f"api:{customer_id}"``), a kind and its numbers. Put it in
``@app.job(limits=[...])`` and the plugin's middleware takes room before the job runs and
gives it back after; or use it inline, ``with app.limiter.concurrent("stripe", 5):``.
Either way a full limiter raises :class:`~cogworker.core.errors.OverLimit`, which the
worker turns into a reschedule (no retry used).
"""

from __future__ import annotations

import contextvars
import logging
import random
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from cogworker.core.broker import LIMITS, LimiterKind, LimiterSpec, LimitStore
from cogworker.core.broker.limits import holder_member, limiter_problem
from cogworker.core.current_job import running_job
from cogworker.core.errors import CogworkerError, ConfigurationError, OverLimit
from cogworker.core.job_options import DefinitionOnly
from cogworker.plugins.limits.options import PLUGIN_NAME, RESCHEDULES_FIELD, LimitsOptions

if TYPE_CHECKING:
    from cogworker.core.payload import Payload
    from cogworker.core.plugin_host import PluginHost

logger = logging.getLogger("cogworker.plugin.limits")

NO_JID = "-"
"""The jid of a holder taken outside any job's run."""


@dataclass(frozen=True, slots=True)
class Acquired:
    """Room taken in one limiter: what a release gives back."""

    spec: LimiterSpec
    holder: str = ""


class Holds:
    """The concurrency slots this process holds now, for the heartbeat to renew."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, dict[str, float]] = {}

    def add(self, name: str, holder: str, lease: float) -> None:
        with self._lock:
            self._held.setdefault(name, {})[holder] = lease

    def remove(self, name: str, holder: str) -> None:
        with self._lock:
            holders = self._held.get(name)
            if holders is not None:
                holders.pop(holder, None)
                if not holders:
                    del self._held[name]

    def snapshot(self) -> dict[str, list[tuple[str, float]]]:
        with self._lock:
            return {name: list(holders.items()) for name, holders in self._held.items()}


class Limiter:
    """``app.limiter``: makes :class:`Limit` objects and takes and gives back room."""

    def __init__(self, app: PluginHost) -> None:
        self.app = app
        self.holds = Holds()
        self._registered: dict[str, LimiterSpec] = {}
        self._lock = threading.Lock()

    # making limits ---------------------------------------------------------------------
    def concurrent(self, name: str, limit: int, *, lease: float | None = None,
                   key: Callable[..., object] | None = None) -> Limit:
        """At most ``limit`` holders at once, fleet-wide; a slot lives ``lease`` seconds
        between renewals (``plugin_options.limits.lease`` by default)."""
        return Limit(self, "concurrent", name, limit, lease=lease, key=key)

    def window(self, name: str, limit: int, *, per: float, sliding: bool = False,
               key: Callable[..., object] | None = None) -> Limit:
        """At most ``limit`` admissions per ``per`` seconds: a fixed window, or the last
        ``per`` seconds with ``sliding=True``."""
        return Limit(self, "window", name, limit, per=per, sliding=sliding, key=key)

    def bucket(self, name: str, rate: float, burst: int, *,
               key: Callable[..., object] | None = None) -> Limit:
        """A steady ``rate`` per second, with bursts of up to ``burst``."""
        return Limit(self, "bucket", name, burst, rate=rate, key=key)

    # taking room -----------------------------------------------------------------------
    @property
    def options(self) -> LimitsOptions:
        options = configured_options(self.app)
        if not isinstance(options, LimitsOptions):
            raise CogworkerError(
                "the limits plugin is not active in this app, so limiters cannot be used: "
                "remove 'no:limits' from the plugins (or add 'limits')")
        return options

    def store(self) -> LimitStore:
        store = self.app.broker.extension(LIMITS)
        if store is None:
            raise CogworkerError(f"the {self.app.broker.name} broker keeps no limiters (no "
                                 f"{LIMITS.name!r} facet): use a broker that has one")
        return store

    def acquire(self, spec: LimiterSpec, job: Payload | None) -> Acquired:
        """Take room for ``job`` (None: outside a job); :class:`OverLimit` when full."""
        options, store = self.options, self.store()
        self._register_once(store, spec)
        holder = ""
        if spec.kind == "concurrent":
            self._check_lease(spec)
            jid = NO_JID if job is None else str(job.get("jid"))
            holder = holder_member(self.app.identity, jid, secrets.token_hex(4))
        admission = store.acquire(spec, holder)
        if not admission.admitted:
            raise OverLimit(spec.name, admission.retry_after,
                            delay=self._wait(options, admission.retry_after, job),
                            max_reschedules=options.max_reschedules)
        if holder:
            self.holds.add(spec.name, holder, spec.lease)
        return Acquired(spec, holder)

    def release(self, acquired: Acquired) -> None:
        """Give back a concurrency slot; a failure is logged (its lease ends it)."""
        if not acquired.holder:
            return
        name = acquired.spec.name
        self.holds.remove(name, acquired.holder)
        try:
            self.store().release(name, acquired.holder)
        except Exception as exc:
            logger.warning("couldn't release a slot of limiter %r (%s); it frees when its "
                           "lease ends, within %.0f s", name, exc, acquired.spec.lease)

    def _register_once(self, store: LimitStore, spec: LimiterSpec) -> None:
        with self._lock:
            if self._registered.get(spec.name) == spec:
                return
        store.register([spec])
        with self._lock:
            self._registered[spec.name] = spec

    def _check_lease(self, spec: LimiterSpec) -> None:
        beat = self.app.settings.heartbeat_interval
        if spec.lease < 2 * beat:
            raise ConfigurationError(
                f"lease of limiter {spec.name!r}", spec.lease,
                f"a number of seconds >= 2 x heartbeat_interval ({2 * beat:g}): each "
                "heartbeat renews the slots, so a shorter lease could end under a live job")

    @staticmethod
    def _wait(options: LimitsOptions, retry_after: float | None,
              job: Payload | None) -> float:
        stored = 0 if job is None else job.get(RESCHEDULES_FIELD, 0)
        count: int = stored if isinstance(stored, int) and not isinstance(stored, bool) else 0
        if retry_after is not None:  # room comes then: never sooner, spread a little after
            return min(options.max_backoff, retry_after) * (1 + random.uniform(0, options.jitter))
        # No estimate (a full concurrent limiter): spread either way around the back-off,
        # so the refused jobs come back apart rather than as one herd at each doubling.
        backoff = min(options.max_backoff, options.backoff * 2.0 ** min(count, 30))
        return backoff * random.uniform(1 - min(options.jitter, 0.9), 1 + options.jitter)


class Limit(DefinitionOnly):
    """One limiter as written in code (see the module docstring)."""

    __slots__ = ("_current", "_limiter", "key", "kind", "lease", "limit", "name", "per",
                 "rate", "sliding")

    def __init__(self, limiter: Limiter, kind: LimiterKind, name: str, limit: int, *,
                 per: float = 0.0, sliding: bool = False, rate: float = 0.0,
                 lease: float | None = None, key: Callable[..., object] | None = None) -> None:
        if key is not None and not callable(key):
            raise ValueError(f"limiter {name!r}: key must be a function of the job's "
                             f"arguments returning the limiter's name, not {key!r}")
        self._limiter = limiter
        self.kind, self.name, self.limit, self.key = kind, name, limit, key
        self.per, self.sliding, self.rate, self.lease = per, sliding, rate, lease
        self._current: contextvars.ContextVar[tuple[Acquired, ...]] = contextvars.ContextVar(
            f"cogworker_limit_{id(self)}", default=())

    def __repr__(self) -> str:
        numbers = {"concurrent": f"limit={self.limit!r} lease={self.lease!r}",
                   "window": f"limit={self.limit!r} per={self.per!r} sliding={self.sliding}",
                   "bucket": f"rate={self.rate!r} burst={self.limit!r}"}.get(self.kind, "")
        keyed = " (keyed by a function of the arguments)" if self.key is not None else ""
        problem = self.problem()
        return (f"<Limit {self.kind} {self.name!r} {numbers}{keyed}"
                f"{': ' + problem if problem else ''}>")

    def problem(self) -> str:
        """What is wrong with this limit, in words ("" when nothing is)."""
        return limiter_problem(self.name, self.kind, self.limit, per=self.per,
                               rate=self.rate, lease=1.0 if self.lease is None else self.lease)

    def spec_for(self, args: Sequence[Any]) -> LimiterSpec:
        """The limiter for a job with these arguments (``key`` names it, if given)."""
        name = self.name if self.key is None else str(self.key(*args))
        lease = self.lease
        if lease is None:
            options = configured_options(self._limiter.app)
            lease = (options or LimitsOptions()).lease
        return LimiterSpec(name, self.kind, self.limit, self.per, self.sliding, self.rate,
                           lease if self.kind == "concurrent" else 0.0)

    def acquire_for(self, job: Payload) -> Acquired:
        """Take room for ``job`` (its arguments pick the limiter); OverLimit when full."""
        args = job.get("args", [])
        return self._limiter.acquire(self.spec_for(args if isinstance(args, list) else []),
                                     job)

    def release(self, acquired: Acquired) -> None:
        self._limiter.release(acquired)

    # inline use ------------------------------------------------------------------------
    def __enter__(self) -> Limit:
        current = running_job()
        job = None if current is None else current.job
        args = [] if job is None else job.get("args", [])
        acquired = self._limiter.acquire(self.spec_for(args if isinstance(args, list)
                                                       else []), job)
        self._current.set((*self._current.get(), acquired))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        held = self._current.get()
        if held:
            self._current.set(held[:-1])
            self._limiter.release(held[-1])


def configured_options(app: PluginHost) -> LimitsOptions | None:
    """The plugin's options, once the app's plugins are configured (asking for
    ``app.hooks`` configures them); None when the plugin is not active."""
    if PLUGIN_NAME not in app.extras:
        app.hooks  # noqa: B018 - builds the plugins: their cogworker_configure runs once
    options = app.extras.get(PLUGIN_NAME)
    return options if isinstance(options, LimitsOptions) else None


def limiter_of(app: PluginHost) -> Limiter:
    """The app's :class:`Limiter` (made on first use)."""
    limiter = app.extras.get(f"{PLUGIN_NAME}.limiter")
    if not isinstance(limiter, Limiter):
        limiter = app.extras[f"{PLUGIN_NAME}.limiter"] = Limiter(app)
    return limiter
