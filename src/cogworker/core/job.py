"""Declaring jobs: ``@app.job`` on a function or a :class:`Job` subclass, and the
``perform_async`` / ``perform_in`` / ``perform_at`` / ``set`` calls that enqueue them (now, or
once a database transaction commits: ``perform_on_commit`` / ``on_commit``).

The enqueue calls are typed with the job's own parameters, so mypy and pyright check
``send_welcome.perform_async(42)`` against ``def send_welcome(user_id: int)``: a function job
is a ``JobFunction[P, R]`` (``P`` its parameters, ``R`` its return type), and a ``Job``
subclass's class methods take the parameters of its ``perform`` (their ``cls`` is typed as
"a class whose ``perform`` takes ``P``", which both checkers solve per subclass). At run
time the arguments are bound to the job's parameters when the job is pushed (see
:mod:`cogworker.core.job_signature`): keyword arguments are stored at their positions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, Protocol, overload

from typing_extensions import TypeVar

from cogworker.core.current_job import check_pct, running_job
from cogworker.core.enqueuer import EnqueueHost, Enqueuer, P
from cogworker.core.errors import JobDefinitionError
from cogworker.core.job_definition import JobDefinition
from cogworker.core.payload import DEFAULT_QUEUE, Payload
from cogworker.core.signatures import Signature

UNIQUE_MODES = ("until_executed", "until_executing", "while_executing")

R = TypeVar("R", default=Any)
"""A job function's return type."""
JobClassT = TypeVar("JobClassT", bound="type[Job]")

class FakeModeView(Protocol):
    """The recorded jobs of fake mode, by stored job name (``app.testing`` is one)."""

    def jobs_of(self, job: str, /) -> list[Payload]: ...

    def clear(self, job: str, /) -> None: ...

    def perform_one(self, job: str, /) -> object: ...

    def drain(self, job: str, /) -> int: ...


class JobHost(EnqueueHost, Protocol):
    """What a declared job needs of its app (:class:`cogworker.App` is one): the enqueue
    path and fake mode's recorded jobs."""

    @property
    def testing(self) -> FakeModeView:
        """Fake and inline mode, and the jobs fake mode recorded."""
        ...


class JobFunction(Generic[P, R]):
    """What ``@app.job`` returns for a function: still callable, plus the enqueue calls.

    ``P`` is the function's parameters and ``R`` its return type, so calling it and every
    enqueue call (``perform_async``, ``perform_in``, ``perform_at``, ``perform_on_commit``,
    and those of ``set(...)`` and ``on_commit(...)``) are type-checked against them. A bare
    ``JobFunction`` annotation means ``JobFunction[..., Any]``: any job function.
    """

    def __init__(self, app: JobHost, definition: JobDefinition, func: Callable[P, R]):
        self.app = app
        self.definition = definition
        self.func = func
        self.__wrapped__ = func
        self.__doc__ = func.__doc__
        self.__name__ = getattr(func, "__name__", definition.name)

    @property
    def name(self) -> str:
        return self.definition.name

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run the function here and now, as if it were not a job."""
        return self.func(*args, **kwargs)

    def _enqueuer(self) -> Enqueuer[P]:
        return Enqueuer(self.app, self.definition, {})

    def perform_async(self, *args: P.args, **kwargs: P.kwargs) -> str | None:
        """Enqueue now (:meth:`Enqueuer.perform_async`)."""
        return self._enqueuer().perform_async(*args, **kwargs)

    def perform_in(self, delay: float | dt.timedelta, /, *args: P.args,
                   **kwargs: P.kwargs) -> str | None:
        """Enqueue to run ``delay`` seconds (or a timedelta) from now."""
        return self._enqueuer().perform_in(delay, *args, **kwargs)

    def perform_at(self, when: float | dt.datetime, /, *args: P.args,
                   **kwargs: P.kwargs) -> str | None:
        """Enqueue to run at a datetime or epoch seconds."""
        return self._enqueuer().perform_at(when, *args, **kwargs)

    def set(self, **overrides: Any) -> Enqueuer[P]:
        """The same job with options changed for the next call only (:meth:`Enqueuer.set`)."""
        return self._enqueuer().set(**overrides)

    def on_commit(self, using: object = None) -> Enqueuer[P]:
        """Enqueue calls that push once the transaction commits (:meth:`Enqueuer.on_commit`)."""
        return self._enqueuer().on_commit(using)

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """A workflow step taking the previous step's result first (:meth:`Enqueuer.s`)."""
        return self._enqueuer().s(*args, **kwargs)

    def si(self, *args: Any, **kwargs: Any) -> Signature:
        """A workflow step that never takes the previous result (:meth:`Enqueuer.si`)."""
        return self._enqueuer().si(*args, **kwargs)

    def perform_on_commit(self, *args: P.args, **kwargs: P.kwargs) -> str | None:
        """Enqueue once the default transaction commits (:meth:`Enqueuer.on_commit`)."""
        return self._enqueuer().perform_on_commit(*args, **kwargs)

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


class _PerformsWith(Protocol[P]):
    """A registered ``Job`` subclass seen through its ``perform``: the ``cls`` type of the
    class-level enqueue calls, so that a checker takes ``P`` from the subclass's own
    ``perform`` at each call (``Report.perform_async(...)`` takes what
    ``Report.perform`` takes)."""

    def perform(self, *args: P.args, **kwargs: P.kwargs) -> Any: ...

    @classmethod
    def _registration(cls) -> tuple[JobHost, JobDefinition]: ...


def _class_enqueuer(job_class: type[_PerformsWith[P]]) -> Enqueuer[P]:
    return Enqueuer(*job_class._registration(), {})


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

            def perform(self, account_id: int, full: bool = False) -> None:
                ...

            def retry_in(self, count, exc, job):  # optional: seconds, "kill" or "discard"
                return 10 * (count + 1)

        Report.perform_async(42, full=True)  # stored as "args": [42, true]

    The class methods ``perform_async``, ``perform_in``, ``perform_at``,
    ``perform_on_commit``, and those of ``set(...)`` and ``on_commit(...)``, take the
    arguments of the subclass's ``perform`` (without ``self``), and mypy and pyright check
    them against it.
    """

    queue: ClassVar[str] = DEFAULT_QUEUE
    retry: ClassVar[bool | int] = True
    unique: ClassVar[str | None] = None
    options: ClassVar[Mapping[str, Any]] = {}

    jid: str
    job: Payload

    _cogworker_app: ClassVar[JobHost | None] = None
    _cogworker_definition: ClassVar[JobDefinition | None] = None

    jobs = _RecordedJobs()

    def perform(self, *args: Any, **kwargs: Any) -> Any:
        """The job's work; a subclass defines it with its own parameters (no keyword-only
        ones, no ``**kwargs``: the arguments are stored as one positional list)."""
        raise NotImplementedError(f"{type(self).__name__} must define perform(self, ...)")

    def progress(self, pct: float, message: str | None = None) -> None:
        """Report how far along this run is (``pct`` from 0 to 100) and what it is doing,
        for the ``status`` plugin (see :meth:`cogworker.CurrentJob.progress`). Outside a
        worker's run (``perform`` called directly, say in a unit test) it is checked and
        dropped."""
        current = running_job()
        if current is not None and current.jid == getattr(self, "jid", None):
            current.progress(pct, message)
        else:
            check_pct(pct)

    def store(self, **fields: object) -> None:
        """Store ``fields`` (as strings) with this run's status (see
        :meth:`cogworker.CurrentJob.store`); dropped outside a worker's run."""
        current = running_job()
        if current is not None and current.jid == getattr(self, "jid", None):
            current.store(**fields)

    def cancelled(self) -> bool:
        """Whether this run was cancelled (``app.cancel``) since it started: a long sync
        job looks now and then and stops (see :meth:`cogworker.CurrentJob.cancelled`).
        False outside a worker's run."""
        current = running_job()
        return (current is not None and current.jid == getattr(self, "jid", None)
                and current.cancelled())

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~cogworker.core.errors.JobCancelled` if this run was cancelled."""
        current = running_job()
        if current is not None and current.jid == getattr(self, "jid", None):
            current.raise_if_cancelled()

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
    def _registration(cls) -> tuple[JobHost, JobDefinition]:
        definition = cls.__dict__.get("_cogworker_definition")
        if cls._cogworker_app is None or definition is None:
            raise JobDefinitionError(
                f"job class {cls.__qualname__} is not registered: decorate it with @app.job"
            )
        return cls._cogworker_app, definition

    @classmethod
    def perform_async(cls: type[_PerformsWith[P]], *args: P.args,
                      **kwargs: P.kwargs) -> str | None:
        """Enqueue now (:meth:`Enqueuer.perform_async`)."""
        return _class_enqueuer(cls).perform_async(*args, **kwargs)

    @classmethod
    def perform_in(cls: type[_PerformsWith[P]], delay: float | dt.timedelta, /,
                   *args: P.args, **kwargs: P.kwargs) -> str | None:
        """Enqueue to run ``delay`` seconds (or a timedelta) from now."""
        return _class_enqueuer(cls).perform_in(delay, *args, **kwargs)

    @classmethod
    def perform_at(cls: type[_PerformsWith[P]], when: float | dt.datetime, /,
                   *args: P.args, **kwargs: P.kwargs) -> str | None:
        """Enqueue to run at a datetime or epoch seconds."""
        return _class_enqueuer(cls).perform_at(when, *args, **kwargs)

    @classmethod
    def set(cls: type[_PerformsWith[P]], **overrides: Any) -> Enqueuer[P]:
        """The same job with options changed for the next call only (:meth:`Enqueuer.set`)."""
        return _class_enqueuer(cls).set(**overrides)

    @classmethod
    def s(cls: type[_PerformsWith[P]], *args: Any, **kwargs: Any) -> Signature:
        """A workflow step taking the previous step's result first (:meth:`Enqueuer.s`)."""
        return _class_enqueuer(cls).s(*args, **kwargs)

    @classmethod
    def si(cls: type[_PerformsWith[P]], *args: Any, **kwargs: Any) -> Signature:
        """A workflow step that never takes the previous result (:meth:`Enqueuer.si`)."""
        return _class_enqueuer(cls).si(*args, **kwargs)

    @classmethod
    def on_commit(cls: type[_PerformsWith[P]], using: object = None) -> Enqueuer[P]:
        """Enqueue calls that push once the transaction commits (:meth:`Enqueuer.on_commit`)."""
        return _class_enqueuer(cls).on_commit(using)

    @classmethod
    def perform_on_commit(cls: type[_PerformsWith[P]], *args: P.args,
                          **kwargs: P.kwargs) -> str | None:
        """Enqueue once the default transaction commits (:meth:`Enqueuer.on_commit`)."""
        return _class_enqueuer(cls).perform_on_commit(*args, **kwargs)

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


class JobDecorator(Protocol):
    """What ``app.job(...)`` with options returns: applied to a ``Job`` subclass it
    registers and returns the class, applied to a function a :class:`JobFunction` with
    the function's parameters and return type."""

    # A Job subclass is callable too: the class overload comes first, and wins.
    @overload
    def __call__(self, target: JobClassT, /) -> JobClassT: ...  # type: ignore[overload-overlap]

    @overload
    def __call__(self, target: Callable[P, R], /) -> JobFunction[P, R]: ...


def default_name(target: Callable[..., Any] | type) -> str:
    module = getattr(target, "__module__", None) or "__main__"
    return f"{module}.{target.__qualname__}"
