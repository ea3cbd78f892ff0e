"""The enqueue calls of one job: :class:`Enqueuer` builds each payload (arguments bound to
the job's parameters and checked, options, jid, time) and hands it to the app's push path,
now or once a database transaction commits.

``JobFunction`` and the ``Job`` class methods (:mod:`cogworker.core.job`) return and
delegate to it; it is generic over the job's parameters ``P``, so that type checkers check
each call against the job's signature.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol

from typing_extensions import ParamSpec

from cogworker.core.payload import Payload, check_json_args, complete, resolve_at
from cogworker.core.signatures import Signature

if TYPE_CHECKING:
    from cogworker.core.job_definition import JobDefinition
    from cogworker.core.registry import JobRegistry

P = ParamSpec("P", default=...)
"""A job's parameters; unknown (``...``, anything goes) where no job pins them."""

DeferPush = Callable[[Callable[[], object]], None]


def to_epoch(when: float | int | dt.datetime | dt.timedelta, now: float | None = None) -> float:
    """``perform_in``/``perform_at`` argument → absolute epoch seconds (``now``: the app clock)."""
    now = time.time() if now is None else now
    if isinstance(when, dt.timedelta):
        return now + when.total_seconds()
    if isinstance(when, dt.datetime):
        if when.tzinfo is None:
            when = when.astimezone()  # a naive datetime is local time, as datetime does
        return when.timestamp()
    if isinstance(when, bool) or not isinstance(when, (int, float)):
        raise TypeError(
            f"the delay must be seconds, a timedelta or a datetime, not {type(when).__name__}"
        )
    return resolve_at(float(when), now)


class EnqueueHost(Protocol):
    """What an enqueue call needs of its app (:class:`cogworker.App` is one): the clock
    pushes are stamped with, the registry that checks overrides, and the push path."""

    @property
    def clock(self) -> Callable[[], float]:
        """The time pushes are stamped with, in epoch seconds."""
        ...

    @property
    def registry(self) -> JobRegistry:
        """The app's jobs; checks one-call option overrides."""
        ...

    def submit(self, payload: Payload) -> str | None:
        """Push a complete payload through the client chain; the jid or None."""
        ...


class Enqueuer(Generic[P]):
    """``perform_async`` and friends for one job, with optional one-call overrides.

    Every call takes the job's own arguments (``P``, checked by mypy and pyright), binds
    them to the job's parameters and stores them positionally: ``perform_async(7,
    text="hi")`` for ``def send(user_id, text)`` stores ``"args": [7, "hi"]``. A call that
    does not bind raises :class:`~cogworker.core.errors.JobCallError`, one with an argument
    that is not JSON :class:`~cogworker.core.errors.JobArgumentError`, both before anything
    is pushed.

    With ``defer`` (see :meth:`on_commit`) each call builds and checks the payload at once
    but hands the push to ``defer``, which runs it when the transaction commits.
    """

    def __init__(self, app: EnqueueHost, definition: JobDefinition, overrides: Mapping[str, Any],
                 defer: DeferPush | None = None):
        self._app = app
        self._definition = definition
        self._overrides = dict(overrides)
        self._defer = defer

    def _submit(self, payload: Payload) -> str | None:
        if self._defer is None:
            return self._app.submit(payload)
        submit = self._app.submit
        self._defer(lambda: submit(payload))
        return str(payload["jid"])

    def _payload(self, args: tuple[Any, ...], kwargs: Mapping[str, Any], now: float,
                 at: float | None = None) -> Payload:
        definition = self._definition
        payload: Payload = {"class": definition.name, **definition.options, **self._overrides}
        payload["args"] = check_json_args(definition.name,
                                          definition.call.positional(args, kwargs))
        if at is not None:
            payload["at"] = at
        return complete(payload, now)

    def perform_async(self, *args: P.args, **kwargs: P.kwargs) -> str | None:
        """Enqueue now; returns the jid, or None when a unique duplicate was skipped."""
        return self._submit(self._payload(args, kwargs, self._app.clock()))

    def perform_in(self, delay: float | dt.timedelta, /, *args: P.args,
                   **kwargs: P.kwargs) -> str | None:
        """Enqueue to run ``delay`` seconds (or a timedelta) from now."""
        now = self._app.clock()
        return self._submit(self._payload(args, kwargs, now, to_epoch(delay, now)))

    def perform_at(self, when: float | dt.datetime, /, *args: P.args,
                   **kwargs: P.kwargs) -> str | None:
        """Enqueue to run at a datetime or epoch seconds."""
        now = self._app.clock()
        return self._submit(self._payload(args, kwargs, now, to_epoch(when, now)))

    def set(self, **overrides: Any) -> Enqueuer[P]:
        """The same job with options changed for the next call only (queue=, retry=...)."""
        self._app.registry.check_overrides(self._definition, overrides)
        return Enqueuer(self._app, self._definition, {**self._overrides, **overrides},
                        self._defer)

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """This call as a workflow step that takes the previous step's result in front of
        ``args`` (see :mod:`cogworker.core.signatures`); checked now."""
        return Signature.of(self._app, self._definition, args, kwargs, self._overrides,
                            immutable=False)

    def si(self, *args: Any, **kwargs: Any) -> Signature:
        """This call as a workflow step that never takes the previous step's result."""
        return Signature.of(self._app, self._definition, args, kwargs, self._overrides,
                            immutable=True)

    def on_commit(self, using: object = None) -> Enqueuer[P]:
        """The same job, pushed only once the current database transaction commits.

        Its ``perform_async``/``perform_in``/``perform_at`` check the arguments and assign
        the jid (returned) at once, and push after the outermost commit; after a rollback,
        or of a savepoint they were called in, nothing is pushed; outside a transaction
        they push at once. ``using`` names the transaction: a Django database alias, a
        SQLAlchemy ``Session``; None is the integration's default. Needs an integration
        (``cogworker.contrib.django`` or ``cogworker.contrib.sqlalchemy``); see
        ``docs/how-to/django.md``. A delay counts from this call, not from the commit.
        """
        from cogworker.core.transactions import defer_to_commit

        return Enqueuer(self._app, self._definition, self._overrides, defer_to_commit(using))

    def perform_on_commit(self, *args: P.args, **kwargs: P.kwargs) -> str | None:
        """``on_commit().perform_async(...)``: enqueue once the default transaction commits
        (or the one an earlier ``on_commit(using=...)`` named)."""
        enqueuer = self if self._defer is not None else self.on_commit()
        return enqueuer.perform_async(*args, **kwargs)
