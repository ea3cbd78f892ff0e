"""``cogworker cron list|run-now|disable|enable``: look at and steer the cron entries.

Parsing and printing only: the work is done by :mod:`cogworker.periodic.admin`. ENTRY is a
pjid or a unique prefix of one (``cogworker cron list`` shows them); an unknown or
ambiguous ENTRY exits 1 with a message saying so.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click

from cogworker.cli.common import app_options, handle_errors, opened_app
from cogworker.periodic import admin

PJID_SHOWN = 12


def _when(value: float | None, empty: str) -> str:
    if value is None:
        return empty
    return dt.datetime.fromtimestamp(value, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _row(status: admin.EntryStatus) -> list[str]:
    if not status.valid:
        next_run = "invalid cron"
    elif not status.enabled:
        next_run = "disabled"
    else:
        next_run = _when(status.next_run, "-")
    job = status.job + (f" {json.dumps(status.args)}" if status.args else "")
    return [status.pjid[:PJID_SHOWN], status.cron, job, status.queue, next_run,
            _when(status.last_run, "never"), "yes" if status.enabled else "no",
            status.running_owner or "-"]


@click.group("cron")
def cron_group() -> None:
    """List, run, disable and enable the cron (periodic) entries."""


@cron_group.command("list")
@app_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@handle_errors
def list_command(as_json: bool, **options: Any) -> None:
    """Every entry: pjid, cron, job, queue, next run, last run, enabled, running lock owner."""
    with opened_app(options) as app:
        statuses = admin.list_entries(app)
    if as_json:
        click.echo(json.dumps([status.to_dict() for status in statuses], indent=2,
                              ensure_ascii=False))
        return
    if not statuses:
        click.echo("no cron entries (none published to this Redis, none registered by the app)")
        return
    headers = ["ENTRY", "CRON", "JOB", "QUEUE", "NEXT RUN", "LAST RUN", "ENABLED", "RUNNING"]
    cells = [headers, *(_row(status) for status in statuses)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        click.echo("  ".join(cell.ljust(width)
                             for cell, width in zip(row, widths, strict=True)).rstrip())


@cron_group.command("run-now")
@click.argument("entry")
@app_options
@handle_errors
def run_now_command(entry: str, **options: Any) -> None:
    """Enqueue ENTRY's job once, now, as an ordinary job (moves no slot)."""
    with opened_app(options) as app:
        jid = admin.run_now(app, entry)
    if jid is None:
        click.echo("skipped by a client middleware (a unique duplicate); nothing enqueued")
    else:
        click.echo(f"enqueued jid={jid}")


@cron_group.command("disable")
@click.argument("entry")
@app_options
@handle_errors
def disable_command(entry: str, **options: Any) -> None:
    """Stop ENTRY firing on every process until it is enabled again."""
    with opened_app(options) as app:
        pjid = admin.disable(app, entry)
    click.echo(f"disabled {pjid}")


@cron_group.command("enable")
@click.argument("entry")
@app_options
@handle_errors
def enable_command(entry: str, **options: Any) -> None:
    """Let ENTRY fire again from its next slot."""
    with opened_app(options) as app:
        pjid = admin.enable(app, entry)
    click.echo(f"enabled {pjid}")
