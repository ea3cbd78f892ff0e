"""``cogworker retry|dead|scheduled``: list, show, retry and delete sorted-set entries.

Parsing and printing only: the work is done by :mod:`cogworker.api`. ``show`` prints one
record in sections (:data:`SHOW_SECTIONS`), then, for retry and dead, the job's failure
trail (the ``attempts`` plugin's) as a table.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from cogworker.api import DeadSet, RetrySet, ScheduledSet, SortedEntry, SortedSet, job_attempts
from cogworker.cli.common import (
    app_options,
    confirm_or_refuse,
    handle_errors,
    one_target,
    opened_app,
    yes_option,
)
from cogworker.cli.output import iso_time, json_option, plural, print_json, print_table, relative
from cogworker.core.backtrace import FIELD as BACKTRACE_FIELD
from cogworker.core.backtrace import backtrace_lines
from cogworker.core.broker import Attempt
from cogworker.core.payload import max_retries

COMPACT_WIDTH = 70
TRAIL_SETS = frozenset({"retry", "dead"})
SCORE_LABELS = {"schedule": "runs at", "retry": "next retry at", "dead": "died at"}
TIME_FIELDS = ("failed_at", "retried_at", "created_at", "enqueued_at")
SHOWN_FIELDS = frozenset({"jid", "class", "queue", "args", "retry", "retry_count", "error_class",
                          "error_message", BACKTRACE_FIELD, *TIME_FIELDS})


def _label(set_class: type[SortedSet]) -> str:
    return f"the {set_class.set_name} set"


def _list_rows(entries: Sequence[SortedEntry], now: float) -> list[tuple[Any, ...]]:
    rows = []
    for entry in entries:
        error = f"{entry.error_class or ''}: {entry.error_message or ''}".strip(": ")
        rows.append((entry.jid, entry.klass, entry.queue or "-", entry.retry_count,
                     relative(entry.score, now), error[:60]))
    return rows


def _entries_or_fail(jobs: SortedSet, jid: str) -> list[SortedEntry]:
    entries = jobs.find_all(jid)
    if not entries:
        raise click.ClickException(
            f"no job with jid {jid!r} in {_label(type(jobs))}; "
            f"`cogworker {_group_name(type(jobs))} list` shows them")
    return entries


def _group_name(set_class: type[SortedSet]) -> str:
    return "scheduled" if set_class is ScheduledSet else set_class.set_name


# show ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ShowSection:
    """A titled block of ``show``'s output (the first one, the fields, has no title)."""

    title: str | None
    lines: list[str]


def _pretty(value: Any) -> list[str]:
    """JSON on one line when it is short, else indented over several."""
    compact = json.dumps(value, ensure_ascii=False, default=str)
    if len(compact) <= COMPACT_WIDTH:
        return [compact]
    return json.dumps(value, indent=2, ensure_ascii=False, default=str).splitlines()


def _field_lines(name: str, value: Any) -> list[str]:
    text = value if isinstance(value, str) else None
    body = [text] if text is not None else _pretty(value)
    first, *rest = body or [""]
    return [f"{name:<14} {first}", *(f"{'':<14} {line}" for line in rest)]


def _fields_section(entry: SortedEntry, now: float) -> ShowSection | None:
    item = entry.item or {}
    lines = [*_field_lines("jid", entry.jid), *_field_lines("class", entry.klass),
             *_field_lines("queue", entry.queue or "-"), *_field_lines("args", entry.args)]
    if entry.sorted_set is not None and entry.sorted_set.set_name != "schedule":
        allowed = max_retries(item.get("retry"))
        lines += _field_lines("retry count", f"{entry.retry_count} (retries allowed: {allowed})")
        error = f"{entry.error_class or '?'}: {entry.error_message or ''}".rstrip(": ")
        lines += _field_lines("error", error)
    label = SCORE_LABELS.get(entry.sorted_set.set_name if entry.sorted_set else "", "score")
    lines += _field_lines(label, f"{iso_time(entry.score)} ({relative(entry.score, now)})")
    for name in TIME_FIELDS:
        if name in item:
            lines += _field_lines(name.replace("_", " "), iso_time(item[name]) or item[name])
    for name in sorted(set(item) - SHOWN_FIELDS):
        lines += _field_lines(name, item[name])
    return ShowSection(None, lines)


def _backtrace_section(entry: SortedEntry, now: float) -> ShowSection | None:
    if entry.item is None or BACKTRACE_FIELD not in entry.item:
        return None
    lines = backtrace_lines(entry.item[BACKTRACE_FIELD])
    title = f"backtrace ({plural(len(lines), 'line')}, innermost call last)"
    return ShowSection(title, lines or ["(stored, but unreadable)"])


SHOW_SECTIONS: tuple[Callable[[SortedEntry, float], ShowSection | None], ...] = (
    _fields_section, _backtrace_section,
)


def _trail_section(trail: Sequence[Attempt]) -> ShowSection | None:
    if not trail:
        return None
    headers = ("ATTEMPT", "FAILED AT", "OUTCOME", "ERROR")
    rows = [(str(a.attempt), iso_time(a.failed_at) or "?", a.outcome,
             f"{a.error_class}: {a.error_message}".strip(": ")[:80]) for a in trail]
    widths = [max(len(row[i]) for row in (headers, *rows)) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
             .rstrip() for row in (headers, *rows)]
    return ShowSection(f"attempts ({plural(len(trail), 'failure')}, oldest first)", lines)


def _print_sections(sections: Sequence[ShowSection]) -> None:
    for section in sections:
        if section.title is not None:
            click.echo(f"\n{section.title}:")
            click.echo("\n".join(f"  {line}" for line in section.lines))
        else:
            click.echo("\n".join(section.lines))


def record_json(entry: SortedEntry, trail: Sequence[Attempt] = ()) -> dict[str, Any]:
    """``show --json``: where the entry is, the whole stored record (``job``) with its
    backtrace decoded into a list of lines, and its failure trail (``attempts``)."""
    job: dict[str, Any] = dict(entry.item) if entry.item is not None else {"raw": entry.value}
    if BACKTRACE_FIELD in job:
        job[BACKTRACE_FIELD] = backtrace_lines(job[BACKTRACE_FIELD])
    set_name = entry.sorted_set.set_name if entry.sorted_set is not None else None
    return {"set": set_name, "jid": entry.jid, "score": entry.score,
            "at": iso_time(entry.score), "job": job,
            "attempts": [attempt.to_dict() for attempt in trail]}


def _show_command(set_class: type[SortedSet]) -> click.Command:
    label = _label(set_class)

    @click.command("show", help=f"Print one entry of {label} in full (JID), with its "
                   "error, backtrace and failure trail (attempts plugin).")
    @app_options
    @click.argument("jid")
    @json_option
    @handle_errors
    def show_command(jid: str, as_json: bool, **options: Any) -> None:
        with opened_app(options) as app:
            entries = _entries_or_fail(set_class(app), jid)
            trail = job_attempts(app, jid) if set_class.set_name in TRAIL_SETS else []
        if as_json:
            print_json([record_json(e, trail) for e in entries] if len(entries) > 1
                       else record_json(entries[0], trail))
            return
        now = time.time()
        for index, entry in enumerate(entries):
            if index:
                click.echo()
            _print_sections([section for section in (build(entry, now)
                                                      for build in SHOW_SECTIONS) if section])
        trail_section = _trail_section(trail)
        if trail_section is not None:
            _print_sections([trail_section])

    return show_command


# list, retry, delete ---------------------------------------------------------------------

def _list_command(set_class: type[SortedSet], newest_first: bool) -> click.Command:
    label = _label(set_class)

    @click.command("list", help=f"List the entries of {label} "
                   f"({'newest' if newest_first else 'due'} first).")
    @app_options
    @click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
                  help="Show at most this many entries.")
    @json_option
    @handle_errors
    def list_command(limit: int, as_json: bool, **options: Any) -> None:
        with opened_app(options) as app:
            jobs = set_class(app)
            entries = list(jobs.entries(newest_first=newest_first, limit=limit))
            total = jobs.size()
        if as_json:
            print_json([entry.to_dict() for entry in entries])
            return
        if not entries:
            click.echo(f"{label} is empty")
            return
        headers = ["JID", "CLASS", "QUEUE", "RETRIES", "AT", "ERROR"]
        print_table(headers, _list_rows(entries, time.time()))
        click.echo(f"showing {len(entries)} of {total}")

    return list_command


def _retry_command(set_class: type[SortedSet]) -> click.Command:
    label = _label(set_class)

    @click.command("retry", help=f"Put one job (JID) or every job (--all) of {label} back "
                   "on its queue now.")
    @app_options
    @click.argument("jid", required=False)
    @click.option("--all", "everything", is_flag=True, help=f"Retry every entry of {label}.")
    @json_option
    @handle_errors
    def retry_command(jid: str | None, everything: bool, as_json: bool,
                      **options: Any) -> None:
        one_target(jid, everything, f"{_group_name(set_class)} retry", name="JID")
        with opened_app(options) as app:
            jobs = set_class(app)
            if jid is None:
                moved = jobs.retry_all()
            else:
                moved = sum(entry.retry_now() for entry in _entries_or_fail(jobs, jid))
                if not moved:
                    raise click.ClickException(
                        f"job {jid} left {label} before it could be moved (a worker or "
                        "someone else took it); nothing was enqueued")
        if as_json:
            print_json({"moved": moved})
        else:
            click.echo(f"moved {plural(moved, 'job')} from {label} back to their queues")

    return retry_command


def _delete_command(set_class: type[SortedSet]) -> click.Command:
    label = _label(set_class)

    @click.command("delete", help=f"Delete one job (JID) or every job (--all, asks first "
                   f"unless --yes) of {label}.")
    @app_options
    @click.argument("jid", required=False)
    @click.option("--all", "everything", is_flag=True, help=f"Delete every entry of {label}.")
    @yes_option
    @json_option
    @handle_errors
    def delete_command(jid: str | None, everything: bool, yes: bool, as_json: bool,
                       **options: Any) -> None:
        one_target(jid, everything, f"{_group_name(set_class)} delete", name="JID")
        with opened_app(options) as app:
            jobs = set_class(app)
            if jid is None:
                confirm_or_refuse(f"Delete all {plural(jobs.size(), 'entry', 'entries')} "
                                  f"of {label}?", yes)
                deleted = jobs.clear()
            else:
                deleted = sum(entry.delete() for entry in _entries_or_fail(jobs, jid))
        if as_json:
            print_json({"deleted": deleted})
        else:
            click.echo(f"deleted {plural(deleted, 'job')} from {label}")

    return delete_command


def _sorted_set_group(set_class: type[SortedSet], name: str, description: str,
                      newest_first: bool, *, with_retry: bool = True) -> click.Group:
    """``cogworker retry``, ``dead`` or ``scheduled`` with its subcommands."""
    group = click.Group(name, help=description)
    commands = [_list_command(set_class, newest_first), _show_command(set_class),
                _delete_command(set_class)]
    if with_retry:
        commands.append(_retry_command(set_class))
    for command in commands:
        group.add_command(command)
    return group


retry_group = _sorted_set_group(
    RetrySet, "retry", "Failed jobs waiting for their next attempt.", newest_first=False)
dead_group = _sorted_set_group(
    DeadSet, "dead", "Jobs that used up their retries (kept until deleted).", newest_first=True)
scheduled_group = _sorted_set_group(
    ScheduledSet, "scheduled", "Jobs pushed to run later (perform_in, perform_at, --in).",
    newest_first=False, with_retry=False)

SET_COMMANDS: list[click.Command] = [retry_group, dead_group, scheduled_group]
