"""Declaring jobs: ``@app.job`` on a function or a :class:`Job` subclass, and the
``perform_async`` / ``perform_in`` / ``perform_at`` / ``set`` calls that enqueue them (now, or
once a database transaction commits: ``perform_on_commit`` / ``on_commit``)."""

from __future__ import annotations

import datetime as dt
import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from cogworker.core.errors import JobDefinitionError
from cogworker.core.job_options import check_reserved
from cogworker.core.payload import (
    DEFAULT_QUEUE,
    Payload,
    check_json_args,
    complete,
    resolve_at,
)

if TYPE_CHECKING:
    from cogworker.app import App

UNIQUE_MODES = ("until_executed", "until_executing", "while_executing")

RetryIn = Callable[..., Any]
DeferPush = Callable[[Callable[[], object]], None]
RetriesExhausted = Callable[..., Any]


@dataclass(slots=True)
class JobDefinition:
    """What the registry knows about one job name."""

    name: str
    target: Callable[..., Any] | type[Job]
    options: dict[str, Any] = field(default_factory=dict)
    retry_in: RetryIn | None = None
    retries_exhausted: RetriesExhausted | None = None
    local_options: dict[str, Any] = field(default_factory=dict)
    """Options whose value is callable (``unique_args``): read by plugins, never stored."""

    @property
    def unique_args(self) -> Callable[[list[Any]], list[Any]] | None:
        """The ``unique_args`` option (read by the unique plugin), or None."""
        chooser = self.local_options.get("unique_args")
        return chooser if callable(chooser) else None

    @property
    def is_class(self) -> bool:
        return isinstance(self.target, type)

    @property
    def is_async(self) -> bool:
        target = self.target
        func = target.perform if isinstance(target, type) and issubclass(target, Job) else target
        return inspect.iscoroutinefunction(func)

    @property
    def queue(self) -> str:
        return str(self.options.get("queue", DEFAULT_QUEUE))

    def instantiate(self, jid: str, job: Payload) -> Any:
        """The object whose ``perform`` runs the job (a Job instance or the function)."""
        if isinstance(self.target, type):
            instance = self.target()
            instance.jid = jid
            instance.job = job
            return instance
        return self.target

    def perform_callable(self, instance: Any) -> Callable[..., Any]:
        method: Callable[..., Any] = instance.perform if self.is_class else instance
        return method


def split_options(name: str, options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(stored, local)``: the options copied into every payload (plain JSON), and those
    whose value is callable (``unique_args``), kept on the definition only.

    Raises :class:`JobDefinitionError` for an option cogworker sets itself (``jid``...) and
    :class:`JobArgumentError` for a value that is neither JSON nor callable. Whether each
    option is declared, and its value valid, is checked by the registry
    (:mod:`cogworker.core.job_options`).
    """
    check_reserved(name, options)
    stored = {key: value for key, value in options.items() if not callable(value)}
    local = {key: value for key, value in options.items() if callable(value)}
    check_json_args(name, [stored])
    return stored, local


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


class Enqueuer:
    """``perform_async`` and friends for one job, with optional one-call overrides.

    With ``defer`` (see :meth:`on_commit`) each call builds and checks the payload at once
    but hands the push to ``defer``, which runs it when the transaction commits.
    """

    def __init__(self, app: App, definition: JobDefinition, overrides: Mapping[str, Any],
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

    def _payload(self, args: tuple[Any, ...], now: float) -> Payload:
        name = self._definition.name
        payload: Payload = {"class": name, **self._definition.options, **self._overrides}
        payload["args"] = check_json_args(name, args)
        return complete(payload, now)

    def perform_async(self, *args: Any) -> str | None:
        """Enqueue now; returns the jid, or None when a unique duplicate was skipped."""
        return self._submit(self._payload(args, self._app.clock()))

    def perform_in(self, delay: float | dt.timedelta, *args: Any) -> str | None:
        """Enqueue to run ``delay`` seconds (or a timedelta) from now."""
        now = self._app.clock()
        payload = self._payload(args, now)
        payload["at"] = to_epoch(delay, now)
        return self._submit(payload)

    def perform_at(self, when: float | dt.datetime, *args: Any) -> str | None:
        """Enqueue to run at a datetime or epoch seconds."""
        now = self._app.clock()
        payload = self._payload(args, now)
        payload["at"] = to_epoch(when, now)
        return self._submit(payload)

    def set(self, **overrides: Any) -> Enqueuer:
        """The same job with options changed for the next call only (queue=, retry=...)."""
        self._app.registry.check_overrides(self._definition, overrides)
        return Enqueuer(self._app, self._definition, {**self._overrides, **overrides},
                        self._defer)

    def on_commit(self, using: object = None) -> Enqueuer:
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

    def perform_on_commit(self, *args: Any) -> str | None:
        """``on_commit().perform_async(*args)``: enqueue once the default transaction commits
        (or the one an earlier ``on_commit(using=...)`` named)."""
        enqueuer = self if self._defer is not None else self.on_commit()
        return enqueuer.perform_async(*args)


class JobFunction:
    """What ``@app.job`` returns for a function: still callable, plus the enqueue calls."""

    def __init__(self, app: App, definition: JobDefinition, func: Callable[..., Any]):
        self.app = app
        self.definition = definition
        self.func = func
        self.__wrapped__ = func
        self.__doc__ = func.__doc__
        self.__name__ = getattr(func, "__name__", definition.name)

    @property
    def name(self) -> str:
        return self.definition.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def _enqueuer(self) -> Enqueuer:
        return Enqueuer(self.app, self.definition, {})

    def perform_async(self, *args: Any) -> str | None:
        return self._enqueuer().perform_async(*args)

    def perform_in(self, delay: float | dt.timedelta, *args: Any) -> str | None:
        return self._enqueuer().perform_in(delay, *args)

    def perform_at(self, when: float | dt.datetime, *args: Any) -> str | None:
        return self._enqueuer().perform_at(when, *args)

    def set(self, **overrides: Any) -> Enqueuer:
        return self._enqueuer().set(**overrides)

    def on_commit(self, using: object = None) -> Enqueuer:
        """Enqueue calls that push once the transaction commits (:meth:`Enqueuer.on_commit`)."""
        return self._enqueuer().on_commit(using)

    def perform_on_commit(self, *args: Any) -> str | None:
        """Enqueue once the default transaction commits (:meth:`Enqueuer.on_commit`)."""
        return self._enqueuer().perform_on_commit(*args)

    # fake mode (see app.testing) ---------------------------------------------------------
    @property
    def jobs(self) -> list[Payload]:
        """Fake mode: this job's recorded payloads, oldest first."""
        return self.app.testing.jobs_of(self.name)

    def clear(self) -> None:
        """Fake mode: forget this job's recorded payloads."""
        self.app.testing.clear(self.name)

    def perform_one(self) -> Any:
        """Fake mode: run the oldest due recorded job; returns what it returned."""
        return self.app.testing.perform_one(self.name)

    def drain(self) -> int:
        """Fake mode: run this job's due recorded jobs until none is left; returns how many."""
        return self.app.testing.drain(self.name)


class _RecordedJobs:
    """``SomeJob.jobs``: the payloads fake mode recorded for a job class, oldest first."""

    def __get__(self, instance: object, owner: type[Job]) -> list[Payload]:
        try:
            app, definition = owner._registration()
        except JobDefinitionError as exc:
            raise AttributeError(str(exc)) from None  # so hasattr() and inspect stay quiet
        return app.testing.jobs_of(definition.name)


class Job:
    """Base class for class-based jobs. Class attributes are options; subclasses inherit.

    ::

        @app.job
        class Report(cogworker.Job):
            queue = "reports"
            retry = 5

            def perform(self, account_id):
                ...

            def retry_in(self, count, exc, job):  # optional: seconds, "kill" or "discard"
                return 10 * (count + 1)
    """

    queue: ClassVar[str] = DEFAULT_QUEUE
    retry: ClassVar[bool | int] = True
    unique: ClassVar[str | None] = None
    options: ClassVar[Mapping[str, Any]] = {}

    jid: str
    job: Payload

    _cogworker_app: ClassVar[App | None] = None
    _cogworker_definition: ClassVar[JobDefinition | None] = None

    jobs = _RecordedJobs()

    def perform(self, *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define perform(self, *args)")

    @classmethod
    def class_options(cls) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            merged.update(klass.__dict__.get("options", {}) or {})
        merged.update(queue=cls.queue, retry=cls.retry)
        if cls.unique is not None:
            merged["unique"] = cls.unique
        return merged

    @classmethod
    def _registration(cls) -> tuple[App, JobDefinition]:
        definition = cls.__dict__.get("_cogworker_definition")
        if cls._cogworker_app is None or definition is None:
            raise JobDefinitionError(
                f"job class {cls.__qualname__} is not registered: decorate it with @app.job"
            )
        return cls._cogworker_app, definition

    @classmethod
    def _enqueuer(cls) -> Enqueuer:
        return Enqueuer(*cls._registration(), {})

    @classmethod
    def perform_async(cls, *args: Any) -> str | None:
        return cls._enqueuer().perform_async(*args)

    @classmethod
    def perform_in(cls, delay: float | dt.timedelta, *args: Any) -> str | None:
        return cls._enqueuer().perform_in(delay, *args)

    @classmethod
    def perform_at(cls, when: float | dt.datetime, *args: Any) -> str | None:
        return cls._enqueuer().perform_at(when, *args)

    @classmethod
    def set(cls, **overrides: Any) -> Enqueuer:
        return cls._enqueuer().set(**overrides)

    @classmethod
    def on_commit(cls, using: object = None) -> Enqueuer:
        """Enqueue calls that push once the transaction commits (:meth:`Enqueuer.on_commit`)."""
        return cls._enqueuer().on_commit(using)

    @classmethod
    def perform_on_commit(cls, *args: Any) -> str | None:
        """Enqueue once the default transaction commits (:meth:`Enqueuer.on_commit`)."""
        return cls._enqueuer().perform_on_commit(*args)

    # fake mode (see app.testing) ---------------------------------------------------------
    @classmethod
    def clear(cls) -> None:
        """Fake mode: forget this job's recorded payloads."""
        app, definition = cls._registration()
        app.testing.clear(definition.name)

    @classmethod
    def perform_one(cls) -> Any:
        """Fake mode: run the oldest due recorded job; returns what it returned."""
        app, definition = cls._registration()
        return app.testing.perform_one(definition.name)

    @classmethod
    def drain(cls) -> int:
        """Fake mode: run this job's due recorded jobs until none is left; returns how many."""
        app, definition = cls._registration()
        return app.testing.drain(definition.name)


def default_name(target: Callable[..., Any] | type) -> str:
    module = getattr(target, "__module__", None) or "__main__"
    return f"{module}.{target.__qualname__}"
