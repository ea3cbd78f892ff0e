"""Building a batch on the client: ``with app.batch(...) as batch:`` and its jobs.

Jobs pushed inside the block (``perform_async``/``perform_in``/``perform_at``/``.set()``,
``batch.add``, ``batch.push``; in this thread or asyncio task, through a context
variable the plugin's client middleware reads) go through the whole client chain up to
the batches middleware, which **holds** them. When the block exits cleanly the held jobs
are pushed (the rest of the chain and the store, one push each) and then the batch is
sealed (one round trip); an exception in the block pushes nothing and releases their
unique locks. Pushing before sealing is safe in both directions: a job that runs before
the seal has its outcome kept and counted at the seal, and a crash between the pushes
and the seal leaves an unsealed batch whose data expires, never one that waits forever.

``push_bulk`` inside a block is the one exception: its jobs are stored together by the
bulk path itself, so they join the batch but are pushed at once (before the seal).

A batch built inside another's block is a child of it: its pushes and seal wait for the
parent's exit. One built inside a running batch job is a child of that job's batch: it
is sealed at its own exit and then registered in the parent, while the job that created
it is still pending there, so the parent cannot complete in between.
"""

from __future__ import annotations

import contextvars
import secrets
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from cogworker.core.broker.batches import CHILD_PREFIX, BatchSpec, CallbackTemplate
from cogworker.core.enqueuer import Enqueuer
from cogworker.core.job import JobFunction
from cogworker.plugins.batches.callbacks import CallbackTarget, definition_of, templates_of
from cogworker.plugins.batches.errors import BatchError
from cogworker.plugins.batches.runtime import runtime_of

if TYPE_CHECKING:
    from cogworker.core.middleware import PushContext
    from cogworker.core.plugin_host import PluginHost
    from cogworker.plugins.batches.handle import BatchHandle

BID_FIELD = "bid"
"""The payload field naming a job's batch (jobs without it cost the plugin nothing)."""
QUEUE_FIELD = "bcq"
"""The payload field naming its batch's callback queue (the settle step's keys)."""

_OPEN: contextvars.ContextVar[Batch | None] = contextvars.ContextVar(
    "cogworker_open_batch", default=None)


def new_bid() -> str:
    """A fresh batch id: 16 random hex characters (Sidekiq's length)."""
    return secrets.token_hex(8)


def open_batch() -> Batch | None:
    """The batch whose block (or ``add``) is collecting pushes in this context."""
    return _OPEN.get()


@dataclass(slots=True)
class _Held:
    ctx: PushContext | None = None
    push: Callable[[], str | None] | None = None
    child: Batch | None = None


class Batch:
    """A batch being built. ``bid`` is known at once; see the module docstring.

    ``existing=True`` builds more jobs into a batch that already exists (what
    :meth:`cogworker.plugins.batches.handle.BatchHandle.jobs` returns): nothing about the
    batch changes but its members.
    """

    def __init__(self, app: PluginHost, *, description: str = "",
                 on_success: CallbackTarget = None, on_complete: CallbackTarget = None,
                 on_death: CallbackTarget = None, callback_queue: str | None = None,
                 bid: str | None = None, existing: bool = False, nest: bool = True) -> None:
        runtime = runtime_of(app)
        self.app = app
        self.bid = bid or new_bid()
        self.description = str(description)
        queue = callback_queue or runtime.options.callback_queue
        if not isinstance(queue, str) or not queue:
            raise BatchError(f"callback_queue must be a non-empty queue name, not {queue!r}")
        self.callback_queue = queue
        self._existing = existing
        self._created_at = app.clock()
        self._callbacks: tuple[CallbackTemplate, ...] = () if existing else templates_of(
            app, {"success": on_success, "complete": on_complete, "death": on_death},
            queue, self._created_at)
        self._held: list[_Held] = []
        self._members: list[str] = []
        self._state: Literal["building", "committed", "discarded"] = "building"
        self._tokens: list[contextvars.Token[Batch | None]] = []
        self._parent_builder: Batch | None = None
        self._parent_running: BatchHandle | None = None
        if nest and not existing:
            self._find_parent()

    def _find_parent(self) -> None:
        from cogworker.plugins.batches.handle import current_batch

        builder = _OPEN.get()
        if builder is not None and builder.app is self.app:
            self._parent_builder = builder
            return
        running = current_batch()
        if running is not None and running.app is self.app:
            self._parent_running = running

    @property
    def parent(self) -> str | None:
        """The parent batch's bid, or None."""
        if self._parent_builder is not None:
            return self._parent_builder.bid
        return self._parent_running.bid if self._parent_running is not None else None

    @property
    def jids(self) -> list[str]:
        """Members so far: jids pushed or held, ``batch:<bid>`` for child batches."""
        return [*self._members, *(_member_of(held) for held in self._held)]

    # collecting -----------------------------------------------------------------------------
    def __enter__(self) -> Batch:
        self._check_building()
        self._tokens.append(_OPEN.set(self))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _OPEN.reset(self._tokens.pop())
        if exc_type is not None:
            self.discard()
        else:
            self.commit()

    @contextmanager
    def _collecting(self) -> Iterator[None]:
        self._check_building()
        token = _OPEN.set(self)
        try:
            yield
        finally:
            _OPEN.reset(token)

    def add(self, job: Any, *args: Any, **kwargs: Any) -> str | None:
        """Enqueue ``job(*args, **kwargs)`` into this batch (``job``: a job function or
        class, ``job.set(...)``, or a registered name); returns its jid."""
        enqueuer = self._enqueuer(job)
        with self._collecting():
            return enqueuer.perform_async(*args, **kwargs)

    def push(self, payload: Mapping[str, Any]) -> str | None:
        """Enqueue a raw payload dict (``class``, ``args``, ``queue``...) into this batch."""
        with self._collecting():
            return self.app.push(payload)

    def _enqueuer(self, job: Any) -> Enqueuer[...]:
        if isinstance(job, Enqueuer):
            return job
        if isinstance(job, JobFunction):
            return job.set()
        definition = definition_of(self.app, job, "batch.add")
        return Enqueuer(self.app, definition, {})

    def hold(self, ctx: PushContext, call_next: Callable[[], str | None]) -> str | None:
        """The client middleware's part: stamp the job and keep its push for the commit."""
        ctx.job[BID_FIELD] = self.bid
        ctx.job[QUEUE_FIELD] = self.callback_queue
        if ctx.bulk:
            jid = call_next()
            if jid is not None:
                self._members.append(jid)
            return jid
        self._held.append(_Held(ctx=ctx, push=call_next))
        return str(ctx.job["jid"])

    # finishing ------------------------------------------------------------------------------
    def commit(self) -> str:
        """Push the held jobs and seal the batch (or hand both to the parent block);
        returns the bid. What ``with`` does at a clean exit."""
        self._check_building()
        self._state = "committed"
        parent = self._parent_builder
        if parent is not None and parent._state == "building":
            parent._held.append(_Held(child=self))
            return self.bid
        self._push_and_seal()
        return self.bid

    def discard(self) -> None:
        """Push nothing; release the unique locks the held jobs took."""
        if self._state == "discarded":
            return
        self._state = "discarded"
        for held in self._held:
            if held.child is not None:
                held.child.discard()
            elif held.ctx is not None:
                self.app.hooks.release_unique_lock(self.app, held.ctx.job, "push-failed")
        self._held.clear()

    def _push_and_seal(self) -> None:
        members = list(self._members)
        held, self._held = self._held, []
        for index, item in enumerate(held):
            try:
                member = self._push_held(item)
            except BaseException:
                for rest in held[index + 1 :]:
                    if rest.ctx is not None:
                        self.app.hooks.release_unique_lock(self.app, rest.ctx.job,
                                                           "push-failed")
                raise
            if member is not None:
                members.append(member)
        self._members = members
        self._seal(members)

    def _push_held(self, held: _Held) -> str | None:
        if held.child is not None:
            held.child._push_and_seal()
            return CHILD_PREFIX + held.child.bid
        assert held.push is not None and held.ctx is not None
        try:
            return held.push()
        except BaseException:
            self.app.hooks.release_unique_lock(self.app, held.ctx.job, "push-failed")
            raise

    def _seal(self, members: list[str]) -> None:
        runtime = runtime_of(self.app)
        now, ttl = self.app.clock(), runtime.options.ttl
        if self._existing:
            runtime.store.register(self.bid, members, now, ttl,
                                   callback_queue=self.callback_queue)
            return
        running = self._parent_running
        spec = BatchSpec(bid=self.bid, created_at=self._created_at,
                         description=self.description, callback_queue=self.callback_queue,
                         parent=self.parent, callbacks=self._callbacks,
                         parent_callback_queue=(self._parent_builder.callback_queue
                                                if self._parent_builder is not None else
                                                running.callback_queue if running else None))
        update = runtime.store.register(self.bid, members, now, ttl, spec=spec)
        if running is not None:
            runtime.store.register(running.bid, [CHILD_PREFIX + self.bid], now, ttl,
                                   callback_queue=running.callback_queue)
        runtime.hand_up(update)

    def _check_building(self) -> None:
        if self._state != "building":
            raise BatchError(f"batch {self.bid} was {self._state} already: build a new "
                             "one with app.batch(...)")


def _member_of(held: _Held) -> str:
    if held.child is not None:
        return CHILD_PREFIX + held.child.bid
    assert held.ctx is not None
    return str(held.ctx.job["jid"])


def hold_if_collecting(app: PluginHost, ctx: PushContext,
                       call_next: Callable[[], str | None]) -> str | None:
    """The client middleware: a push inside an open batch joins it; any other push (and
    one that already names its batch) goes straight on."""
    batch = _OPEN.get()
    if batch is None or batch.app is not app or BID_FIELD in ctx.job:
        return call_next()
    return batch.hold(ctx, call_next)
