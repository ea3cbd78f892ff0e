"""The job registry: stored job name → :class:`JobDefinition`."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from cogworker.core.callables import call_with_arity
from cogworker.core.errors import JobDefinitionError, UnknownJobError
from cogworker.core.job import Job, JobDefinition, default_name, validate_options


class JobRegistry:
    def __init__(self) -> None:
        self._jobs: dict[str, JobDefinition] = {}
        self._lock = threading.Lock()

    def __contains__(self, name: object) -> bool:
        return name in self._jobs

    def __len__(self) -> int:
        return len(self._jobs)

    def names(self) -> list[str]:
        return sorted(self._jobs)

    def resolve(self, name: str) -> JobDefinition:
        try:
            return self._jobs[name]
        except KeyError:
            raise UnknownJobError(name, self._jobs) from None

    def get(self, name: str) -> JobDefinition | None:
        return self._jobs.get(name)

    def register(
        self,
        target: Callable[..., Any] | type[Job],
        *,
        name: str | None,
        options: dict[str, Any],
        retry_in: Callable[..., Any] | None = None,
        retries_exhausted: Callable[..., Any] | None = None,
    ) -> JobDefinition:
        """Register a function or a Job subclass under ``name`` (default: import path)."""
        job_name = name or default_name(target)
        if isinstance(target, type):
            definition = self._class_definition(target, job_name, options)
        else:
            definition = self._function_definition(
                target, job_name, options, retry_in, retries_exhausted
            )
        with self._lock:
            existing = self._jobs.get(job_name)
            if existing is not None and existing.target is not target:
                raise JobDefinitionError(
                    f"two jobs are named {job_name!r} ({existing.target!r} and {target!r}); "
                    "give one of them another name= "
                )
            self._jobs[job_name] = definition
        return definition

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
        merged = {**target.class_options(), **options}
        unique_args = merged.pop("unique_args", None)
        return JobDefinition(
            name=job_name,
            target=target,
            options=validate_options(job_name, merged),
            retry_in=_method_or_none(target, "retry_in"),
            retries_exhausted=_method_or_none(target, "retries_exhausted"),
            unique_args=unique_args,
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
        merged = dict(options)
        unique_args = merged.pop("unique_args", None)
        if unique_args is not None and not callable(unique_args):
            raise JobDefinitionError(f"job {job_name!r}: unique_args must be a callable")
        for hook_name, hook in (("retry_in", retry_in), ("retries_exhausted", retries_exhausted)):
            if hook is not None and not callable(hook):
                raise JobDefinitionError(f"job {job_name!r}: {hook_name} must be a callable")
        return JobDefinition(
            name=job_name,
            target=target,
            options=validate_options(job_name, merged),
            retry_in=retry_in,
            retries_exhausted=retries_exhausted,
            unique_args=unique_args,
        )


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
