"""Job options: which ones exist, who declared them, and checking a job's options.

Every option a job may set (``@app.job(queue=..., retry=...)``, a ``Job`` class's
attributes and ``options``, ``.set(...)``) must be *declared*, so a typo such as
``retries=3`` is an error where it is written instead of a silent default. Declarations
come from three places, none privileged over another:

* cogworker itself (:data:`CORE_JOB_OPTIONS`: ``queue``, ``retry``, ``backtrace``,
  ``time_limit``, ``expires_in``, ``expires_at``);
* plugins, through the ``cogworker_job_options`` hook (the ``unique`` plugin declares
  ``unique``, ``unique_for`` and ``unique_args``);
* the app's own code, with :meth:`cogworker.App.declare_job_options`, for options that
  its middleware reads (Sidekiq's "custom options").

An option whose value is callable (``unique_args``), a :class:`DefinitionOnly` object, or a
non-empty list of them (``limits=[app.limiter.concurrent("stripe", 5)]``) stays on the
job's definition; every other value must be JSON and is copied into each payload.
"""

from __future__ import annotations

import difflib
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cogworker.core.errors import JobDefinitionError, PluginConflictError

CORE_OWNER = "cogworker"
APP_OWNER = "the app (App.declare_job_options)"


class DefinitionOnly:
    """Base of option values that are Python objects a plugin reads from the job's
    definition (``definition.local_options``), never copied into payloads: a limiter."""

    __slots__ = ()


def stays_on_definition(value: object) -> bool:
    """Whether an option's value stays on the definition (see the module docstring)."""
    if callable(value) or isinstance(value, DefinitionOnly):
        return True
    return (isinstance(value, (list, tuple)) and bool(value)
            and all(isinstance(item, DefinitionOnly) for item in value))


@dataclass(frozen=True, slots=True)
class JobOption:
    """One job option a plugin (or the app) reads.

    ``accepted`` describes the valid values in words ("a number of seconds > 0"); ``check``
    returns True for a valid value (None: any value is accepted).
    """

    name: str
    accepted: str = "any JSON value"
    check: Callable[[Any], bool] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a job option name must be an identifier, not {self.name!r}")


@dataclass(frozen=True, slots=True)
class DeclaredOption:
    """A :class:`JobOption` and who declared it; ``active`` is False for an option of a
    plugin deactivated with ``no:NAME`` (accepted, and ignored since nothing reads it)."""

    option: JobOption
    owner: str
    active: bool = True


def _is_retry(value: object) -> bool:
    return isinstance(value, bool) or (isinstance(value, int) and value >= 0)


def _is_time_limit(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and 0 < value < float("inf"))


def _is_epoch(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and 0 < value < float("inf"))


def _is_queue(value: object) -> bool:
    return isinstance(value, str) and value != "" and not any(c.isspace() for c in value)


CORE_JOB_OPTIONS: tuple[JobOption, ...] = (
    JobOption("queue", "a non-empty queue name without whitespace", _is_queue),
    JobOption("retry", "True (25 retries), False (none) or a whole number of retries >= 0",
              _is_retry),
    JobOption("backtrace", "True (keep the failure's backtrace), False, or a number of "
              "lines >= 0 to keep", _is_retry),
    JobOption("time_limit", "a finite number of seconds > 0 the job may run (see "
              "docs/explanation/delivery.md, time limits)", _is_time_limit),
    JobOption("expires_in", "a finite number of seconds > 0 after which a job that has not "
              "started is dropped, counted from when it is due", _is_time_limit),
    JobOption("expires_at", "epoch seconds after which a job that has not started is "
              "dropped; one call's option (.set(expires_at=...))", _is_epoch),
)
PER_CALL_OPTIONS = frozenset({"expires_at"})
"""Options that only make sense for one call, refused at decoration."""
CORE_OPTION_NAMES = frozenset(option.name for option in CORE_JOB_OPTIONS)
RESERVED_OPTIONS = frozenset({"class", "args", "jid", "created_at", "enqueued_at", "at"})


class OptionCatalog:
    """Declared options by name; two declarations of one name are an error naming both."""

    def __init__(self) -> None:
        self._options: dict[str, DeclaredOption] = {}
        self.add(CORE_OWNER, CORE_JOB_OPTIONS)

    def add(self, owner: str, options: Iterable[JobOption | str], *,
            active: bool = True) -> None:
        for item in options:
            option = JobOption(item) if isinstance(item, str) else item
            if not isinstance(option, JobOption):
                raise PluginConflictError(
                    f"{owner} declared the job option {item!r}, which is neither a name nor a "
                    "cogworker.JobOption")
            previous = self._options.get(option.name)
            if previous is not None and previous.owner != owner:
                raise PluginConflictError(
                    f"the job option {option.name!r} is declared twice, by {previous.owner} "
                    f"and by {owner}; a job option has one owner: rename one of them")
            self._options[option.name] = DeclaredOption(option, owner, active)

    def __contains__(self, name: object) -> bool:
        return name in self._options

    def get(self, name: str) -> DeclaredOption | None:
        return self._options.get(name)

    def names(self) -> list[str]:
        return sorted(self._options)


def where_defined(target: object) -> str:
    """``file.py:12`` for a function or class, or its repr when the source is unknown."""
    unwrapped = inspect.unwrap(target) if callable(target) else target
    try:
        path = inspect.getsourcefile(unwrapped)  # type: ignore[arg-type]
        code = getattr(unwrapped, "__code__", None)
        if path and isinstance(code, types.CodeType):
            # a function's first line, as getsourcelines finds it, without reading and
            # tokenizing its source: every registration asks (a first push's included)
            return f"{path}:{code.co_firstlineno}"
        _lines, line = inspect.getsourcelines(unwrapped)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return repr(target)
    return f"{path}:{line}" if path else repr(target)


def check_reserved(job: str, options: Mapping[str, Any]) -> None:
    """Options cogworker sets itself (``jid``, ``args``...) cannot be job options."""
    bad = RESERVED_OPTIONS.intersection(options)
    if bad:
        raise JobDefinitionError(
            f"job {job!r}: option(s) {sorted(bad)} are set by cogworker itself; remove them")


def check_declarable(job: str, options: Mapping[str, Any]) -> None:
    """A one-call option (``expires_at``) cannot be declared on the job itself."""
    per_call = PER_CALL_OPTIONS.intersection(options)
    if per_call:
        raise JobDefinitionError(
            f"job {job!r}: {sorted(per_call)[0]} is a time for one call; give it with "
            f".set({sorted(per_call)[0]}=...) when enqueuing, or declare expires_in=SECONDS "
            "on the job")


def check_values(job: str, options: Mapping[str, Any], catalog: OptionCatalog,
                 *, where: str | None = None, names: Iterable[str] | None = None) -> None:
    """Check that every option (or those in ``names``) is declared and has a valid value.

    Raises :class:`JobDefinitionError` naming the job, where it is defined, the option,
    the closest declared name and who declares what.
    """
    label = f"job {job!r}" + (f" ({where})" if where else "")
    for name in sorted(options if names is None else names):
        declared = catalog.get(name)
        if declared is None:
            raise JobDefinitionError(_unknown_message(label, name, catalog))
        option, value = declared.option, options[name]
        if option.check is not None and not option.check(value):
            raise JobDefinitionError(
                f"{label}: option {name}={value!r} is not valid: {name} must be "
                f"{option.accepted} (declared by {declared.owner})")


def _unknown_message(label: str, name: str, catalog: OptionCatalog) -> str:
    close = difflib.get_close_matches(name, catalog.names(), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else "."
    return (
        f"{label}: unknown option {name!r}{hint} Declared options: "
        f"{', '.join(catalog.names())}. An option read by a plugin is declared by that "
        "plugin (activate it with --plugin NAME); one read by your own middleware is "
        "declared with app.declare_job_options(...) before the job is decorated."
    )
