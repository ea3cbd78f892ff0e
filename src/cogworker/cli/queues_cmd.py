"""``cogworker queues [list|show|clear|pause|resume]``: the queues and their jobs.

Parsing and printing only: the work is done by :class:`cogworker.api.Queue`. ``cogworker
queues`` alone lists them, as ``cogworker queues list`` does.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import click

from cogworker.api import Queue
from cogworker.app import App
from cogworker.cli.common import (
    APP_OPTION_NAMES,
    app_options,
    confirm_or_refuse,
    handle_errors,
    opened_app,
    yes_option,
)
from cogworker.cli.output import json_option, plural, print_json, print_table, relative, seconds


def _inherited(options: dict[str, Any]) -> dict[str, Any]:
    """The app options, taking any given before the subcommand (``queues -A x show q``)."""
    parent = click.get_current_context().parent
    given = parent.params if parent is not None else {}
    merged = dict(options)
    for name in APP_OPTION_NAMES:
        if not merged.get(name) and given.get(name):
            merged[name] = given[name]
    return merged


def _list(as_json: bool, options: dict[str, Any]) -> None:
    with opened_app(options) as app:
        summaries = Queue.all(app)
    if as_json:
        print_json([summary.to_dict() for summary in summaries])
        return
    if not summaries:
        click.echo("no queues yet (a queue appears once a job is pushed or a worker reads it)")
        return
    print_table(["QUEUE", "SIZE", "LATENCY", "STATE"], [
        (s.name, s.size, seconds(s.latency), "paused" if s.paused else "active")
        for s in summaries
    ])


@click.group("queues", invoke_without_command=True)
@app_options
@json_option
@click.pass_context
@handle_errors
def queues_group(ctx: click.Context, /, as_json: bool, **options: Any) -> None:
    """List every known queue with its size, latency (age of the next job) and state;
    the subcommands show, clear, pause and resume one queue."""
    if ctx.invoked_subcommand is None:
        _list(as_json, options)


@queues_group.command("list")
@app_options
@json_option
@handle_errors
def list_command(as_json: bool, **options: Any) -> None:
    """List every known queue with its size, latency and state (active or paused)."""
    _list(as_json, _inherited(options))


def _known(app: App, name: str) -> bool:
    return any(summary.name == name for summary in Queue.all(app))


@queues_group.command("show")
@app_options
@click.argument("name")
@click.option("--page", type=click.IntRange(min=1), default=1, show_default=True,
              help="Which page (1 = the jobs that run next).")
@click.option("--per-page", type=click.IntRange(1, 1000), default=25, show_default=True,
              help="Jobs per page.")
@json_option
@handle_errors
def show_command(name: str, page: int, per_page: int, as_json: bool, **options: Any) -> None:
    """The jobs waiting on queue NAME, the next to run first, one page at a time."""
    with opened_app(_inherited(options)) as app:
        queue = Queue(app, name)
        total, paused = queue.size(), queue.paused
        records = queue.jobs((page - 1) * per_page, per_page)
        known = total > 0 or _known(app, name)
    if as_json:
        print_json({"queue": name, "size": total, "paused": paused, "page": page,
                    "per_page": per_page, "jobs": [record.to_dict() for record in records]})
        return
    if not known:
        raise click.ClickException(
            f"no queue named {name!r} (no job was pushed to it and no worker reads it); "
            "`cogworker queues` lists the known ones")
    pages = max(math.ceil(total / per_page), 1)
    state = " (paused)" if paused else ""
    click.echo(f"queue {name}{state}: {plural(total, 'job')}, page {page} of {pages}")
    now = time.time()
    first = (page - 1) * per_page + 1
    rows = []
    for position, record in enumerate(records, start=first):
        stamp = record.get("enqueued_at") or record.get("created_at")
        age = relative(float(stamp), now) if isinstance(stamp, (int, float)) else "-"
        rows.append((position, record.jid, record.klass,
                     json.dumps(record.args, ensure_ascii=False)[:60], age))
    if rows:
        print_table(["#", "JID", "CLASS", "ARGS", "ENQUEUED"], rows)
    if page < pages:
        click.echo(f"next: cogworker queues show {name} --page {page + 1}")


@queues_group.command("clear")
@app_options
@click.argument("name")
@yes_option
@json_option
@handle_errors
def clear_command(name: str, yes: bool, as_json: bool, **options: Any) -> None:
    """Delete every job waiting on queue NAME (asks first unless --yes)."""
    with opened_app(_inherited(options)) as app:
        queue = Queue(app, name)
        confirm_or_refuse(f"Delete all {plural(queue.size(), 'job')} waiting on queue "
                          f"{name!r}?", yes)
        deleted = queue.clear()
    if as_json:
        print_json({"queue": name, "deleted": deleted})
    else:
        click.echo(f"deleted {plural(deleted, 'job')} from queue {name}")


def _pause_command(pause: bool) -> click.Command:
    verb = "pause" if pause else "resume"

    @click.command(verb, help=("Make workers skip queue NAME from their next fetch on, until "
                               "resumed." if pause else "Let workers take jobs from a paused "
                               "queue NAME again."))
    @app_options
    @click.argument("name")
    @handle_errors
    def command(name: str, **options: Any) -> None:
        with opened_app(_inherited(options)) as app:
            queue = Queue(app, name)
            if pause:
                queue.pause()
            else:
                queue.resume()
            known = _known(app, name)
        click.echo(f"{'paused' if pause else 'resumed'} queue {name}")
        if not known:
            click.echo(f"warning: no queue named {name!r} is known yet (no job was pushed to "
                       "it and no worker reads it): check the name", err=True)

    return command


queues_group.add_command(_pause_command(True))
queues_group.add_command(_pause_command(False))
