"""``cogworker history``: the run history, filtered and sorted by the broker.

Parsing and printing only: the reading is :mod:`cogworker.api.history`.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from typing import Any

import click

from cogworker.api.history import History
from cogworker.cli.common import CogworkerUsageError, app_options, handle_errors, opened_app
from cogworker.cli.output import iso_time, json_option, print_json, print_table
from cogworker.core.broker import RUN_STATUSES, HistoryRecord
from cogworker.core.broker.history import MAX_PAGE

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SORTS = {"finished": "finished_at", "duration": "duration"}
ERROR_WIDTH = 60


def parse_moment(text: str, option: str, now: float | None = None) -> float:
    """Epoch seconds of ``text``: a duration ago (``15m``, ``2h``, ``7d``), an ISO 8601
    date or time (UTC unless it says otherwise), or epoch seconds. Exit 2 otherwise."""
    relative = _RELATIVE.match(text.strip())
    if relative:
        ago = float(relative.group(1)) * _UNIT_SECONDS[relative.group(2)]
        return (time.time() if now is None else now) - ago
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise CogworkerUsageError(
            f"{option}: cannot read {text!r} as a time: give a duration ago (30s, 15m, 2h, "
            "7d), an ISO 8601 date or time (2026-12-01, 2026-12-01T09:30:00Z) or epoch "
            "seconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


def duration_text(seconds: float) -> str:
    """``850us``, ``12.3ms``, ``4.20s``, ``3m 12s``, ``2h 5m``."""
    if seconds < 0.001:
        return f"{seconds * 1_000_000:.0f}us"
    if seconds < 1:
        return f"{seconds * 1000:.1f}ms"
    if seconds < 60:
        return f"{seconds:.2f}s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {rest}s"
    return f"{minutes // 60}h {minutes % 60}m"


def error_text(record: HistoryRecord) -> str:
    if record.status != "failed":
        return ""
    text = f"{record.error_class}: {record.error_message or ''}".replace("\n", " ")
    return text if len(text) <= ERROR_WIDTH else text[:ERROR_WIDTH - 1] + "…"


def record_json(record: HistoryRecord) -> dict[str, Any]:
    data = record.to_dict()
    data.update(started_at=iso_time(record.started_at), finished_at=iso_time(record.finished_at),
                duration=record.duration)
    return data


@click.command("history")
@app_options
@click.option("--status", type=click.Choice(RUN_STATUSES),
              help="Only records with this status (expired and cancelled jobs have one too).")
@click.option("--class", "job_class", metavar="NAME", help="Only runs of this job class.")
@click.option("--queue", metavar="NAME", help="Only runs from this queue.")
@click.option("--jid", metavar="JID", help="Only runs of this job (its whole timeline).")
@click.option("--since", metavar="WHEN",
              help="Finished at or after WHEN: 15m, 2h, 7d (ago), an ISO date/time, or epoch s.")
@click.option("--until", "until", metavar="WHEN", help="Finished at or before WHEN.")
@click.option("--sort", type=click.Choice(sorted(SORTS)), default="finished", show_default=True,
              help="Order by finish time or by duration.")
@click.option("--asc", is_flag=True, help="Oldest (or fastest) first instead of newest first.")
@click.option("--limit", type=click.IntRange(1, MAX_PAGE), default=25, show_default=True,
              help="How many runs to show.")
@click.option("--cursor", metavar="CURSOR", help="Go on from where a previous page stopped.")
@json_option
@handle_errors
def history_command(status: str | None, job_class: str | None, queue: str | None,
                    jid: str | None, since: str | None, until: str | None, sort: str,
                    asc: bool, limit: int, cursor: str | None, as_json: bool,
                    **options: Any) -> None:
    """The run history (the history plugin records it): one line per run, newest first."""
    for name, value in (("--class", job_class), ("--queue", queue), ("--jid", jid)):
        if value is not None and not value.strip():
            raise CogworkerUsageError(f"{name} must not be empty")
    since_at = parse_moment(since, "--since") if since else None
    until_at = parse_moment(until, "--until") if until else None
    if since_at is not None and until_at is not None and since_at > until_at:
        raise CogworkerUsageError("--since is later than --until: nothing could match")
    with opened_app(options) as app:
        try:
            page = History(app).page(
                status=status, job_class=job_class, queue=queue,  # type: ignore[arg-type]
                jid=jid, since=since_at, until=until_at, sort=SORTS[sort],  # type: ignore[arg-type]
                descending=not asc, limit=limit, cursor=cursor)
        except ValueError as exc:
            raise CogworkerUsageError(str(exc)) from exc
    if as_json:
        print_json({"records": [record_json(r) for r in page.records], "total": page.total,
                    "cursor": page.cursor})
        return
    if not page.records:
        click.echo("no runs match" if page.cursor is None else
                   f"no runs match in the part looked at; go on with --cursor {page.cursor}")
        return
    print_table(["JID", "CLASS", "QUEUE", "STATUS", "FINISHED", "DURATION", "ERROR"],
                [[r.jid, r.job_class, r.queue, r.status, iso_time(r.finished_at) or "",
                  duration_text(r.duration), error_text(r)] for r in page.records])
    total = "" if page.total is None else f" of {page.total}"
    more = f"; more: --cursor {page.cursor}" if page.cursor else ""
    click.echo(f"{len(page.records)}{total} run(s){more}")
