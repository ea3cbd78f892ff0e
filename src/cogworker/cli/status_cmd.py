"""``cogworker status JID``: one job's status and progress (the ``status`` plugin's record).

Parsing and printing only: the data comes from :func:`cogworker.api.job_status`. An
unknown or expired jid prints one line saying so and exits 1, so a script can wait on it.
"""

from __future__ import annotations

import time
from typing import Any

import click

from cogworker.api import JobStatus, job_status
from cogworker.cli.common import app_options, handle_errors, opened_app
from cogworker.cli.output import iso_time, json_option, print_json, relative


def _lines(status: JobStatus, now: float) -> list[str]:
    rows: list[tuple[str, str]] = [("jid", status.jid), ("state", status.state)]
    if status.class_name:
        rows.append(("class", status.class_name))
    if status.queue:
        rows.append(("queue", status.queue))
    if status.pct is not None:
        rows.append(("progress", f"{status.pct:g}%"))
    if status.message:
        rows.append(("message", status.message))
    if status.error_class or status.error_message:
        error = f"{status.error_class or '?'}: {status.error_message or ''}".rstrip(": ")
        rows.append(("error", error))
    rows += [(name, value) for name, value in sorted(status.fields.items())]
    rows.append(("updated", f"{iso_time(status.updated_at)} "
                            f"({relative(status.updated_at, now)})"))
    rows.append(("expires", f"{iso_time(status.expires_at)} "
                            f"({relative(status.expires_at, now)})"))
    width = max(len(name) for name, _ in rows)
    return [f"{name:<{width}}  {value}" for name, value in rows]


@click.command("status", help="Print the status of one job (JID): its state, progress, "
               "message, stored fields and last error. Needs the status plugin on the "
               "workers (and on the pushers, for 'queued'). Exits 1 when the job is "
               "unknown or its status expired.")
@app_options
@click.argument("jid")
@json_option
@handle_errors
def status_command(jid: str, as_json: bool, **options: Any) -> None:
    with opened_app(options) as app:
        status = job_status(app, jid)
    if status is None:
        click.echo(f"no status for jid {jid!r}: unknown, expired (after "
                   f"plugin_options.status.ttl), or the status plugin is not active", err=True)
        raise SystemExit(1)
    if as_json:
        print_json(status.to_dict())
        return
    click.echo("\n".join(_lines(status, time.time())))
