"""``cogworker cancel JID [JID...]``: cancel jobs (:mod:`cogworker.api.cancel`).

Parsing and printing only. One line per jid (``--json``: a list of objects). Exits 0 when
every jid was cancelled, signalled or too late, 1 when any was unknown (the cancellation is
kept anyway, in case the job turns up), 2 on a usage error.
"""

from __future__ import annotations

from typing import Any

import click

from cogworker.api.cancel import CancelOutcome, CancelResult, cancel_job
from cogworker.cli.common import app_options, handle_errors, opened_app
from cogworker.cli.output import json_option, print_json

_SAYS = {
    CancelOutcome.CANCELLED: "cancelled before it started (removed from {where})",
    CancelOutcome.SIGNALLED: "signalled ({where}): its worker tells it to stop",
    CancelOutcome.TOO_LATE: "too late: it already finished ({where})",
    CancelOutcome.UNKNOWN: "unknown: no such job found; the cancellation is kept in case it "
                           "turns up",
}


def _line(result: CancelResult) -> str:
    return f"{result.jid}  {_SAYS[result.outcome].format(where=result.where)}"


@click.command("cancel", help="Cancel jobs by JID: a waiting job (queued, scheduled, "
               "retrying) is removed, a running one is told to stop, and the cancellation "
               "is kept (plugin_options.cancel.ttl) so the job never starts later. The "
               "workers need the cancel plugin (on by default). Exits 1 when a JID is "
               "unknown.")
@app_options
@click.argument("jids", nargs=-1, required=True, metavar="JID [JID...]")
@json_option
@handle_errors
def cancel_command(jids: tuple[str, ...], as_json: bool, **options: Any) -> None:
    blank = [jid for jid in jids if not jid.strip()]
    if blank:
        raise click.UsageError("a JID cannot be empty")
    with opened_app(options) as app:
        results = [cancel_job(app, jid) for jid in dict.fromkeys(jids)]
    if as_json:
        print_json([result.to_dict() for result in results])
    else:
        for result in results:
            click.echo(_line(result))
    if any(result.outcome is CancelOutcome.UNKNOWN for result in results):
        raise SystemExit(1)
