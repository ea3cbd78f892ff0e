"""``cogworker stats|queues|retry|dead|ctl``: look at and steer a running fleet.

Parsing and printing only: the work is done by :mod:`cogworker.api`. Every command takes
the app options and ``--json`` for machines; usage mistakes exit 2, failures exit 1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import click

from cogworker.api import (
    DeadSet,
    ProcessSet,
    Queue,
    RetrySet,
    SortedEntry,
    SortedSet,
    Stats,
    WorkSet,
)
from cogworker.cli.common import CogworkerUsageError, app_options, handle_errors, opened_app

json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print JSON instead of a table.")


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [list(headers), *([str(cell) for cell in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths,
                                                                        strict=True)).rstrip())


def _plural(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def _seconds(value: float) -> str:
    """A duration for people: 12.5s, 3.2m, 1.5h."""
    if value < 60:
        return f"{value:.1f}s"
    if value < 3600:
        return f"{value / 60:.1f}m"
    return f"{value / 3600:.1f}h"


# stats and queues ------------------------------------------------------------------------

@click.command("stats")
@app_options
@json_option
@handle_errors
def stats_command(as_json: bool, **options: Any) -> None:
    """Print the fleet's counters: processed, failed, enqueued, set sizes, processes."""
    with opened_app(options) as app:
        data: dict[str, int] = Stats(app).to_dict()
        data["processes"] = ProcessSet(app).size()
        data["busy"] = WorkSet(app).size()
    if as_json:
        _print_json(data)
        return
    for name, value in data.items():
        click.echo(f"{name:<10} {value}")


@click.command("queues")
@app_options
@json_option
@handle_errors
def queues_command(as_json: bool, **options: Any) -> None:
    """List every known queue with its size, latency (age of the next job) and state."""
    with opened_app(options) as app:
        summaries = Queue.all(app)
    if as_json:
        _print_json([summary.to_dict() for summary in summaries])
        return
    if not summaries:
        click.echo("no queues yet (a queue appears once a job is pushed or a worker reads it)")
        return
    _print_table(["QUEUE", "SIZE", "LATENCY", "STATE"], [
        (s.name, s.size, _seconds(s.latency), "paused" if s.paused else "active")
        for s in summaries
    ])


# retry and dead --------------------------------------------------------------------------

def _one_target(jid: str | None, everything: bool, action: str) -> None:
    if (jid is None) == (not everything):
        raise CogworkerUsageError(f"{action}: give either a JID or --all (not both)")


def _list_rows(entries: Sequence[SortedEntry], now: float) -> list[tuple[Any, ...]]:
    rows = []
    for entry in entries:
        error = f"{entry.error_class or ''}: {entry.error_message or ''}".strip(": ")
        when = entry.score - now
        at = f"in {_seconds(when)}" if when >= 0 else f"{_seconds(-when)} ago"
        rows.append((entry.jid, entry.klass, entry.queue or "-", entry.retry_count, at,
                     error[:60]))
    return rows


def _label(set_class: type[SortedSet]) -> str:
    return f"the {set_class.set_name} set"


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
            _print_json([entry.to_dict() for entry in entries])
            return
        if not entries:
            click.echo(f"{label} is empty")
            return
        _print_table(["JID", "CLASS", "QUEUE", "RETRIES", "AT", "ERROR"],
                     _list_rows(entries, time.time()))
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
        _one_target(jid, everything, f"{set_class.set_name} retry")
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
            _print_json({"moved": moved})
        else:
            click.echo(f"moved {_plural(moved, 'job')} from {label} back to their queues")

    return retry_command


def _delete_command(set_class: type[SortedSet]) -> click.Command:
    label = _label(set_class)

    @click.command("delete", help=f"Delete one job (JID) or every job (--all) of {label}.")
    @app_options
    @click.argument("jid", required=False)
    @click.option("--all", "everything", is_flag=True, help=f"Delete every entry of {label}.")
    @json_option
    @handle_errors
    def delete_command(jid: str | None, everything: bool, as_json: bool,
                       **options: Any) -> None:
        _one_target(jid, everything, f"{set_class.set_name} delete")
        with opened_app(options) as app:
            jobs = set_class(app)
            if jid is None:
                deleted = jobs.clear()
            else:
                deleted = sum(entry.delete() for entry in _entries_or_fail(jobs, jid))
        if as_json:
            _print_json({"deleted": deleted})
        else:
            click.echo(f"deleted {_plural(deleted, 'job')} from {label}")

    return delete_command


def _sorted_set_group(set_class: type[SortedSet], description: str,
                      newest_first: bool) -> click.Group:
    """``cogworker retry`` or ``cogworker dead`` with ``list``, ``retry``, ``delete``."""
    group = click.Group(set_class.set_name, help=description)
    for command in (_list_command(set_class, newest_first), _retry_command(set_class),
                    _delete_command(set_class)):
        group.add_command(command)
    return group


def _entries_or_fail(jobs: SortedSet, jid: str) -> list[SortedEntry]:
    entries = jobs.find_all(jid)
    if not entries:
        raise click.ClickException(
            f"no job with jid {jid!r} in {_label(type(jobs))}; "
            f"`cogworker {jobs.set_name} list` shows them")
    return entries


retry_group = _sorted_set_group(
    RetrySet, "Failed jobs waiting for their next attempt.", newest_first=False)
dead_group = _sorted_set_group(
    DeadSet, "Jobs that used up their retries (kept until deleted).", newest_first=True)


# ctl -------------------------------------------------------------------------------------

@click.group("ctl")
def ctl_group() -> None:
    """Steer live worker processes: quiet (take no new jobs), resume, stop."""


@ctl_group.command("list")
@app_options
@json_option
@handle_errors
def ctl_list_command(as_json: bool, **options: Any) -> None:
    """List live processes with their identity (the name quiet/resume/stop take)."""
    with opened_app(options) as app:
        processes = list(ProcessSet(app))
    if as_json:
        _print_json([process.to_dict() for process in processes])
        return
    if not processes:
        click.echo("no live processes")
        return
    _print_table(["IDENTITY", "BUSY", "STATE", "QUEUES"], [
        (p.identity, f"{p.busy}/{p.concurrency if p.concurrency is not None else '?'}",
         "quiet" if p.is_quiet else "active", ",".join(dict.fromkeys(p.queues)))
        for p in processes
    ])


def _signal_command(message: str, description: str) -> click.Command:
    @click.command(message, help=description)
    @app_options
    @click.argument("identity", required=False)
    @click.option("--all", "everything", is_flag=True, help="Every live process.")
    @json_option
    @handle_errors
    def command(identity: str | None, everything: bool, as_json: bool,
                **options: Any) -> None:
        _one_target(identity, everything, f"ctl {message}")
        with opened_app(options) as app:
            processes = ProcessSet(app)
            if identity is None:
                targets = list(processes)
            else:
                found = processes.get(identity)
                if found is None:
                    raise click.ClickException(
                        f"no live process with identity {identity!r} (it stopped, or its "
                        "heartbeat expired); `cogworker ctl list` shows the live ones")
                targets = [found]
            # PUBLISH returns how many subscribers got it: 0 means nobody listened.
            reached = [p.identity for p in targets if getattr(p, message)() > 0]
        _report_signalled(message, reached, [p.identity for p in targets], as_json)

    return command


def _report_signalled(message: str, reached: list[str], targets: list[str],
                      as_json: bool) -> None:
    if as_json:
        _print_json({"signal": message, "signalled": len(reached), "processes": reached,
                     "not_listening": [t for t in targets if t not in reached]})
        return
    click.echo(f"sent {message} to {_plural(len(reached), 'process', 'processes')}")
    for identity in targets:
        if identity not in reached:
            click.echo(f"warning: {identity} is alive but was not listening for signals",
                       err=True)


for _message, _description in (
    ("quiet", "Make a process (IDENTITY or --all) take no new jobs; running ones finish."),
    ("resume", "Make a quiet process (IDENTITY or --all) take jobs again."),
    ("stop", "Make a process (IDENTITY or --all) finish its jobs and exit."),
):
    ctl_group.add_command(_signal_command(_message, _description))


ADMIN_COMMANDS: list[click.Command] = [
    stats_command, queues_command, retry_group, dead_group, ctl_group,
]
