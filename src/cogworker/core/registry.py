"""The job registry: stored job name → :class:`JobDefinition`, options checked on the way in.

A job's options are checked when it is registered (see :mod:`cogworker.core.job_options`):
cogworker's own options always at once; options declared by plugins against the plugins
the app activates. The CLI imports an app before it applies its own flags (``--plugin X``
may add the plugin that declares an option), so while it imports it defers the plugin
options (:func:`deferred_option_checks`) and checks every job afterwards with
:meth:`JobRegistry.check_all`, still before anything runs.
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from cogworker.core.callables import call_with_arity
from cogworker.core.errors import JobDefinitionError, UnknownJobError
from cogworker.core.job import Job, default_name
from cogworker.core.job_definition import JobDefinition, split_options
from cogworker.core.job_options import (
    CORE_OPTION_NAMES,
    OptionCatalog,
    check_declarable,
    check_values,
    where_defined,
)

OptionSource = Callable[[], OptionCatalog]

_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "cogworker_deferred_option_checks", default=False)


@contextlib.contextmanager
def deferred_option_checks() -> Iterator[None]:
    """Within this block, registering a job checks only cogworker's own options; plugin
    options wait for :meth:`JobRegistry.check_all` (the CLI calls it after its flags)."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


class JobRegistry:
    def __init__(self, option_source: OptionSource | None = None) -> None:
        """``option_source()`` gives the options declared for the app's active plugins;
        without one, only cogworker's own options are known."""
        self._jobs: dict[str, JobDefinition] = {}
        self._lock = threading.Lock()
        self._option_source = option_source or OptionCatalog

    def __contains__(self, name: object) -> bool:
        return name in self._jobs

    def __len__(self) -> int:
        return len(self._jobs)

    def names(self) -> list[str]:
        return sorted(self._jobs)

    def app_names(self) -> list[str]:
        """The jobs the app registered, without those plugins register for themselves."""
        return sorted(name for name, job in self._jobs.items() if job.plugin is None)

    def definitions(self) -> list[JobDefinition]:
        """Every registered job, by name."""
        return [self._jobs[name] for name in sorted(self._jobs)]

    def resolve(self, name: str) -> JobDefinition:
        try:
            return self._jobs[name]
        except KeyError:
            raise UnknownJobError(name, self._jobs) from None

    def get(self, name: str) -> JobDefinition | None:
        return self._jobs.get(name)

    def suggest(self, name: str) -> str | None:
        """The registered name ``name`` most likely means: the one whose last dotted part
        it is (``send`` → ``app.jobs.send``) when only one is, else the closest spelling."""
        by_short = [known for known in self._jobs if known.rsplit(".", 1)[-1] == name]
        if len(by_short) == 1:
            return by_short[0]
        close = difflib.get_close_matches(name, list(self._jobs), n=1, cutoff=0.6)
        if close:
            return close[0]
        shorts = {known.rsplit(".", 1)[-1]: known for known in self._jobs}
        close = difflib.get_close_matches(name, list(shorts), n=1, cutoff=0.6)
        return shorts[close[0]] if close else None

    def register(
        self,
        target: Callable[..., Any] | type[Job],
        *,
        name: str | None,
        options: dict[str, Any],
        retry_in: Callable[..., Any] | None = None,
        retries_exhausted: Callable[..., Any] | None = None,
        plugin: str | None = None,
    ) -> JobDefinition:
        """Register a function or a Job subclass under ``name`` (default: import path);
        ``plugin`` names the plugin whose own job it is (the app's jobs have none).

        Raises :class:`JobDefinitionError` for an unknown option (with the closest
        declared name) or an invalid value, naming the job and where it is defined.
        """
        job_name = name or default_name(target)
        if isinstance(target, type):
            if retry_in is not None or retries_exhausted is not None:
                raise JobDefinitionError(
                    f"job class {target.__qualname__}: retry_in= and retries_exhausted= are "
                    "for function jobs; define them as methods of the class")
            definition = self._class_definition(target, job_name, options)
        else:
            definition = self._function_definition(
                target, job_name, options, retry_in, retries_exhausted
            )
        definition.plugin = plugin
        self._check(definition, _all_options(definition))
        with self._lock:
            existing = self._jobs.get(job_name)
            if existing is not None and existing.target is not target:
                raise JobDefinitionError(
                    f"two jobs are named {job_name!r} ({existing.target!r} and {target!r}); "
                    "give one of them another name= "
                )
            self._jobs[job_name] = definition
        return definition

    def check_overrides(self, definition: JobDefinition, overrides: Mapping[str, Any]) -> None:
        """Check the options of one ``.set(...)`` call like those of a registration."""
        stored, local = split_options(definition.name, overrides)
        self._check(definition, {**stored, **local})

    def check_all(self) -> None:
        """Check every registered job's options against the declared options now.

        Raises :class:`JobDefinitionError` for the first job (by name) with an unknown
        option or an invalid value.
        """
        pending = [d for d in self.definitions() if set(_all_options(d)) - CORE_OPTION_NAMES]
        if not pending:
            return
        catalog = self._option_source()
        for definition in pending:
            check_values(definition.name, _all_options(definition), catalog,
                         where=where_defined(definition.target))

    def _check(self, definition: JobDefinition, options: Mapping[str, Any]) -> None:
        where = where_defined(definition.target)
        core = [key for key in options if key in CORE_OPTION_NAMES]
        check_values(definition.name, options, OptionCatalog(), where=where, names=core)
        others = [key for key in options if key not in CORE_OPTION_NAMES]
        if others and not _DEFERRED.get():
            check_values(definition.name, options, self._option_source(), where=where,
                         names=others)

    @staticmethod
    def _class_definition(
        target: type, job_name: str, options: dict[str, Any]
    ) -> JobDefinition:
        if not issubclass(target, Job):
            raise JobDefinitionError(
                f"{target.__qualname__} must subclass cogworker.Job to be a class-based job"
            )
        if target.perform is Job.perform:
            raise JobDefinitionError(f"job class {target.__qualname__} must define perform()")
        declared = {**target.class_options(), **options}
        check_declarable(job_name, declared)
        stored, local = split_options(job_name, declared)
        return JobDefinition(
            name=job_name,
            target=target,
            options=stored,
            retry_in=_method_or_none(target, "retry_in"),
            retries_exhausted=_method_or_none(target, "retries_exhausted"),
            local_options=local,
        )

    @staticmethod
    def _function_definition(
        target: Callable[..., Any],
        job_name: str,
        options: dict[str, Any],
        retry_in: Callable[..., Any] | None,
        retries_exhausted: Callable[..., Any] | None,
    ) -> JobDefinition:
        if not callable(target):
            raise JobDefinitionError(f"@app.job needs a function or a Job subclass, not {target!r}")
        for hook_name, hook in (("retry_in", retry_in), ("retries_exhausted", retries_exhausted)):
            if hook is not None and not callable(hook):
                raise JobDefinitionError(f"job {job_name!r}: {hook_name} must be a callable")
        check_declarable(job_name, options)
        stored, local = split_options(job_name, options)
        return JobDefinition(
            name=job_name,
            target=target,
            options=stored,
            retry_in=retry_in,
            retries_exhausted=retries_exhausted,
            local_options=local,
        )


def _all_options(definition: JobDefinition) -> dict[str, Any]:
    return {**definition.options, **definition.local_options}


def _method_or_none(target: type, attr: str) -> Callable[..., Any] | None:
    """A class-level hook as a callable; plain methods run on a fresh instance."""
    raw = inspect.getattr_static(target, attr, None)
    if raw is None:
        return None
    if isinstance(raw, (staticmethod, classmethod)):
        bound: Callable[..., Any] = getattr(target, attr)
        return bound
    if not inspect.isfunction(raw):
        raise JobDefinitionError(f"{target.__qualname__}.{attr} must be a method")

    def call_on_instance(*args: Any) -> Any:
        return call_with_arity(getattr(target(), attr), *args)

    return call_on_instance
