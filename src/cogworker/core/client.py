"""The push path: normalize → unique lock → client middleware → dispatch.

Dispatch stores the job through the broker, or hands it to the testing mode in force.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cogworker.core.middleware import ClientMiddleware, PushContext, run_chain
from cogworker.core.payload import Payload, encode, normalize
from cogworker.core.plugin_host import PluginHost

BULK_BATCH = 1_000

Dispatcher = Callable[[PushContext], str | None]


class PushHost(PluginHost, Protocol):
    """What the push path needs of its app: the plugin view, the app's own client
    middleware, and the dispatch a testing mode puts in place of the broker's store."""

    @property
    def client_middleware(self) -> Sequence[ClientMiddleware]:
        """The app's own client middleware, run after the plugins'."""
        ...

    @property
    def dispatch_override(self) -> Dispatcher | None:
        """The last step of a push in a testing mode (fake, inline); None: the broker."""
        ...


@dataclass(slots=True)
class _Batch:
    immediate: list[tuple[str, str]] = field(default_factory=list)
    scheduled: list[tuple[float, str]] = field(default_factory=list)

    def add(self, job: Payload, now: float) -> None:
        at = job.get("at")
        if at is not None:
            self.scheduled.append((float(at), encode(job)))
        else:
            job["enqueued_at"] = now
            self.immediate.append((job["queue"], encode(job)))

    def __len__(self) -> int:
        return len(self.immediate) + len(self.scheduled)


def _check_at(job: Payload) -> None:
    at = job.get("at")
    if at is not None and (isinstance(at, bool) or not isinstance(at, (int, float))):
        raise TypeError(f"'at' must be epoch seconds, not {at!r}")


class Client:
    """Pushes jobs for one app."""

    def __init__(self, app: PushHost) -> None:
        self.app = app
        self._plugin_chain: tuple[object, list[ClientMiddleware]] | None = None

    def _chain(self) -> list[ClientMiddleware]:
        """Plugin middleware (asked once per plugin set), then the app's own."""
        hooks = self.app.hooks
        cached = self._plugin_chain
        if cached is None or cached[0] is not hooks:
            cached = self._plugin_chain = (hooks, hooks.client_middleware(self.app))
        return [*cached[1], *self.app.client_middleware]

    def _prepare(self, item: Mapping[str, Any], *, check_options: bool) -> Payload:
        job = normalize(item, now=self.app.clock())  # checks the arguments are JSON
        _check_at(job)
        if check_options:
            encode(job)  # a non-JSON option fails here, before any lock of the batch is taken
        return job

    def _through_chain(self, job: Payload, innermost: Dispatcher, *,
                       bulk: bool = False) -> str | None:
        """Unique lock, then the client middleware chain around ``innermost``."""
        hooks = self.app.hooks
        if hooks.acquire_unique_lock(self.app, job) is False:
            return None
        ctx = PushContext(app=self.app, job=job, queue=job["queue"],
                          scheduled_at=job.get("at"), bulk=bulk)
        chain = self._chain()
        try:
            return run_chain(chain, ctx, lambda: innermost(ctx)) if chain else innermost(ctx)
        except BaseException:
            hooks.release_unique_lock(self.app, job, "push-failed")
            raise

    def push(self, item: Mapping[str, Any]) -> str | None:
        """Store one job; returns its jid, or None when a unique duplicate was skipped."""
        return self.submit(self._prepare(item, check_options=False))

    def submit(self, job: Payload) -> str | None:
        """:meth:`push` for a payload already complete (see :func:`payload.complete`)."""
        # A non-JSON option fails at dispatch; _through_chain then releases the unique lock.
        return self._through_chain(job, self._dispatch_one)

    def _dispatch_one(self, ctx: PushContext) -> str | None:
        override = self.app.dispatch_override
        if override is not None:
            return override(ctx)
        batch = _Batch()
        batch.add(ctx.job, self.app.clock())
        self.app.broker.queues.store(batch.immediate, batch.scheduled)
        return str(ctx.job["jid"])

    def push_bulk(self, items: Sequence[Mapping[str, Any]]) -> list[str | None]:
        """Store many jobs with one round trip per :data:`BULK_BATCH` jobs."""
        jobs = [self._prepare(item, check_options=True) for item in items]
        results: list[str | None] = []
        for start in range(0, len(jobs), BULK_BATCH):
            results.extend(self._push_batch(jobs[start : start + BULK_BATCH]))
        return results

    def _push_batch(self, jobs: list[Payload]) -> list[str | None]:
        batch = _Batch()
        now = self.app.clock()
        override = self.app.dispatch_override
        accepted: list[Payload] = []

        def collect(ctx: PushContext) -> str | None:
            if override is not None:
                return override(ctx)
            batch.add(ctx.job, now)
            accepted.append(ctx.job)
            return str(ctx.job["jid"])

        results = [self._through_chain(job, collect, bulk=True) for job in jobs]
        if len(batch):
            try:
                self.app.broker.queues.store(batch.immediate, batch.scheduled)
            except BaseException:
                for job in accepted:
                    self.app.hooks.release_unique_lock(self.app, job, "push-failed")
                raise
        return results
