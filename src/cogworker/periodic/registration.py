"""Registering cron entries: in code (``app.periodic``) and in the config file.

In code::

    app.periodic("*/5 * * * *", cleanup, args=["tmp"], queue="maintenance")
    app.periodic("0 9 * * mon-fri Europe/Berlin", "reports.daily", unique="until_executed")

In the config file (``pyproject.toml``; in ``cogworker.toml`` drop the ``tool.cogworker.``
prefix)::

    [[tool.cogworker.plugin_options.periodic.entries]]
    cron = "*/5 * * * *"
    job = "myapp.jobs.cleanup"
    args = ["tmp"]
    queue = "maintenance"      # optional: default "default"
    retry = 0                  # optional: default 0 (no retries)
    unique = "until_executed"  # optional

Every entry is checked when it is registered: an invalid one raises
:class:`~cogworker.core.errors.PeriodicEntryError` naming the entry and what is wrong.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

from cogworker.core.errors import JobArgumentError, JobCallError, PeriodicEntryError
from cogworker.core.job import Job, JobFunction
from cogworker.core.payload import DEFAULT_QUEUE, check_json_args
from cogworker.core.periodic_types import PeriodicEntry
from cogworker.periodic.cron import CronExpressionError, next_fire, parse_cron

if TYPE_CHECKING:
    from cogworker.app import App

EXTRA_KEY: Final = "periodic"
OPTIONS_PLUGIN: Final = "periodic"
OPTIONS_ENTRIES: Final = "entries"
UNIQUE_MODES: Final = ("until_executed",)
CONFIG_FIELDS: Final = frozenset({"cron", "job", "args", "retry", "unique", "queue"})


@dataclass(slots=True)
class PeriodicRegistry:
    """The cron entries registered in code for one app, by pjid (registration order).

    ``replace`` is set by ``app.periodic(..., replace=True)``: the ticker then replaces the
    whole published schedule instead of adding to it.
    """

    entries: dict[str, PeriodicEntry] = field(default_factory=dict)
    replace: bool = False


def registry_of(app: App) -> PeriodicRegistry:
    """The app's registry of code entries (created on first use)."""
    registry = app.extras.get(EXTRA_KEY)
    if registry is None:
        registry = app.extras.setdefault(EXTRA_KEY, PeriodicRegistry())
    return cast("PeriodicRegistry", registry)


def job_name_of(job: Any, cron: object = None) -> str:
    """The stored job name of a JobFunction, a registered Job subclass, or a name string."""
    if isinstance(job, JobFunction):
        return job.name
    if isinstance(job, type) and issubclass(job, Job):
        definition = job.__dict__.get("_cogworker_definition")
        if definition is None:
            raise PeriodicEntryError(cron, job.__qualname__,
                                     "the job class is not registered: decorate it with @app.job")
        return str(definition.name)
    if isinstance(job, str) and job.strip():
        return job
    raise PeriodicEntryError(
        cron, job, "the job must be a function decorated with @app.job, a registered Job "
        "subclass, or a job name string"
    )


def _check_retry(retry: Any, cron: str, job: str) -> bool | int:
    if not retry:
        return 0  # as the original: a falsy value means no retries
    if isinstance(retry, bool) or (isinstance(retry, int) and retry > 0):
        return retry
    raise PeriodicEntryError(cron, job, f"retry={retry!r} must be True, False or a count >= 0")


def _check_queue(queue: Any, cron: str, job: str) -> str:
    if queue is None:
        return DEFAULT_QUEUE
    if isinstance(queue, str) and queue.strip():
        return queue
    raise PeriodicEntryError(cron, job, f"queue={queue!r} must be a non-empty queue name")


def make_entry(
    cron: Any,
    job: Any,
    *,
    args: Sequence[Any] | None = None,
    retry: Any = 0,
    unique: str | None = None,
    queue: str | None = None,
    now: float | None = None,
) -> PeriodicEntry:
    """Check everything about one entry and build it; raises :class:`PeriodicEntryError`."""
    job_name = job_name_of(job, cron)
    if not isinstance(cron, str):
        raise PeriodicEntryError(cron, job_name, "the cron expression must be a string")
    try:
        parse_cron(cron)
        next_fire(cron, time.time() if now is None else now)
    except CronExpressionError as exc:
        raise PeriodicEntryError(cron, job_name, str(exc)) from None
    if args is not None and (isinstance(args, (str, bytes)) or not isinstance(args, Sequence)):
        raise PeriodicEntryError(cron, job_name, f"args={args!r} must be a list")
    try:
        checked_args = check_json_args(job_name, list(args or []))
    except JobArgumentError as exc:
        raise PeriodicEntryError(cron, job_name, str(exc)) from None
    if unique is not None and unique not in UNIQUE_MODES:
        raise PeriodicEntryError(
            cron, job_name, f"unique={unique!r} is not supported for cron entries: use "
            "'until_executed' (no run starts while the previous one still runs) or None"
        )
    return PeriodicEntry(
        cron=cron, job_name=job_name, args=checked_args, retry=_check_retry(retry, cron, job_name),
        unique=unique, queue=_check_queue(queue, cron, job_name),
    )


def register(
    app: App,
    cron: str,
    job: Any,
    *,
    args: Sequence[Any] | None = None,
    retry: Any = 0,
    unique: str | None = None,
    queue: str | None = None,
    replace: bool = False,
) -> PeriodicEntry:
    """Check and add one entry to the app (``App.periodic`` delegates here).

    ``replace=True`` first forgets the entries registered before and makes the ticker replace
    the whole published schedule with this app's entries (stale rows disappear). Use it on
    the first call only, and only when every process sharing the Redis runs the same
    schedule: processes with different schedules would erase each other's rows.
    """
    entry = make_entry(cron, job, args=args, retry=retry, unique=unique, queue=queue)
    check_args_fit(app, entry)
    registry = registry_of(app)
    if replace:
        registry.entries.clear()
        registry.replace = True
    registry.entries[entry.pjid] = entry
    return entry


def configured_entries(app: App) -> list[PeriodicEntry]:
    """The entries listed in the config file (``plugin_options.periodic.entries``)."""
    options = app.settings.plugin_options.get(OPTIONS_PLUGIN, {})
    raw_entries = options.get(OPTIONS_ENTRIES, [])
    if not isinstance(raw_entries, Sequence) or isinstance(raw_entries, (str, bytes)):
        raise PeriodicEntryError(None, None, f"plugin_options.periodic.entries must be a list "
                                 f"of tables, not {raw_entries!r}")
    return [_entry_from_config(index, item) for index, item in enumerate(raw_entries)]


def check_args_fit(app: App, entry: PeriodicEntry) -> None:
    """Refuse an entry whose ``args`` do not bind to its job's parameters, when this app
    registered the job (a job name registered only by another service is not checked)."""
    definition = app.registry.get(entry.job_name)
    if definition is None:
        return
    try:
        definition.call.positional(entry.args, {}, shown=f"args={entry.args!r}")
    except JobCallError as exc:
        raise PeriodicEntryError(entry.cron, entry.job_name, str(exc)) from None


def _entry_from_config(index: int, item: object) -> PeriodicEntry:
    if not isinstance(item, Mapping):
        raise PeriodicEntryError(None, None, f"plugin_options.periodic.entries[{index}] must be "
                                 f"a table with cron and job, not {item!r}")
    cron, job = item.get("cron"), item.get("job")
    unknown = sorted(set(item) - CONFIG_FIELDS)
    if unknown:
        raise PeriodicEntryError(cron, job, f"unknown field(s) {', '.join(unknown)} in "
                                 f"plugin_options.periodic.entries[{index}]; accepted: "
                                 f"{', '.join(sorted(CONFIG_FIELDS))}")
    if cron is None or job is None:
        raise PeriodicEntryError(cron, job, f"plugin_options.periodic.entries[{index}] needs "
                                 "both cron and job")
    return make_entry(cron, job, args=item.get("args"), retry=item.get("retry", 0),
                      unique=item.get("unique"), queue=item.get("queue"))


def all_entries(app: App) -> list[PeriodicEntry]:
    """Code entries, then config-file entries; one entry per pjid (the first wins)."""
    entries: dict[str, PeriodicEntry] = dict(registry_of(app).entries)
    for entry in configured_entries(app):
        entries.setdefault(entry.pjid, entry)
    for entry in entries.values():  # jobs registered after their entry are checked here
        check_args_fit(app, entry)
    return list(entries.values())


def replaces_schedule(app: App) -> bool:
    """Whether ``app.periodic(..., replace=True)`` was used."""
    return registry_of(app).replace
