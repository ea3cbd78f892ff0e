"""``cogworker batches list|show BID|cancel BID``: see and cancel batches.

Parsing and printing only: the data comes from :mod:`cogworker.api.batches`.
"""

from __future__ import annotations

import time
from typing import Any

import click

from cogworker.api.batches import Batches, BatchInfo
from cogworker.cli.common import (
    app_options,
    confirm_or_refuse,
    handle_errors,
    opened_app,
    yes_option,
)
from cogworker.cli.output import iso_time, json_option, print_json, relative

MEMBERS_SHOWN = 20


def _counts(info: BatchInfo) -> str:
    c = info.counts
    return (f"{c.total} total, {c.pending} pending, {c.succeeded} succeeded, "
            f"{c.failed} failed, {c.dead} dead")


def _table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in
                             zip(row, widths, strict=True)).rstrip())


@click.group("batches")
def batches_group() -> None:
    """Batches of jobs (the batches plugin): their counts, callbacks and members."""


@batches_group.command("list")
@app_options
@click.option("--page", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--per-page", type=click.IntRange(1, 1000), default=25, show_default=True)
@json_option
@handle_errors
def list_command(page: int, per_page: int, as_json: bool, **options: Any) -> None:
    """List batches, newest first."""
    with opened_app(options) as app:
        found = Batches(app).list(page=page, per_page=per_page)
    if as_json:
        print_json({"page": found.page, "pages": found.pages, "total": found.total,
                    "batches": [info.to_dict() for info in found.items]})
        return
    if not found.items:
        click.echo("no batches")
        return
    now = time.time()
    rows = [["BID", "STATE", "TOTAL", "PENDING", "FAILED", "DEAD", "CREATED", "DESCRIPTION"]]
    for info in found.items:
        c = info.counts
        rows.append([info.bid, info.state, str(c.total), str(c.pending), str(c.failed),
                     str(c.dead), relative(info.created_at, now), info.description])
    _table(rows)
    click.echo(f"page {found.page} of {found.pages} ({found.total} batches)")


@batches_group.command("show")
@app_options
@click.argument("bid")
@json_option
@handle_errors
def show_command(bid: str, as_json: bool, **options: Any) -> None:
    """Show one batch: counts, callbacks fired, and its pending and failed members.
    Exits 1 when the batch is unknown or its data expired."""
    with opened_app(options) as app:
        batches = Batches(app)
        info = batches.get(bid)
        pending = batches.jobs(bid, "pending", per_page=MEMBERS_SHOWN) if info else None
        failed = batches.jobs(bid, "failed", per_page=MEMBERS_SHOWN) if info else None
    if info is None or pending is None or failed is None:
        click.echo(f"no batch {bid!r}: unknown, or its data expired", err=True)
        raise SystemExit(1)
    if as_json:
        print_json({**info.to_dict(), "pending_jobs": pending.items,
                    "failed_jobs": failed.items})
        return
    fired = ", ".join(f"{kind} at {iso_time(at)}" for kind, at in info.fired.items())
    rows = [("bid", info.bid), ("description", info.description), ("state", info.state),
            ("created", iso_time(info.created_at) or ""), ("counts", _counts(info)),
            ("callbacks", ", ".join(info.callbacks) or "none"), ("fired", fired or "none"),
            ("callback queue", info.callback_queue), ("parent", info.parent or "none")]
    for label, page in (("pending", pending), ("failed", failed)):
        if page.items:
            more = f" (+{page.total - len(page.items)} more)" if page.total > len(page.items) \
                else ""
            rows.append((label, " ".join(page.items) + more))
    width = max(len(name) for name, _ in rows)
    click.echo("\n".join(f"{name:<{width}}  {value}" for name, value in rows))


@batches_group.command("cancel")
@app_options
@click.argument("bid")
@yes_option
@json_option
@handle_errors
def cancel_command(bid: str, yes: bool, as_json: bool, **options: Any) -> None:
    """Cancel a batch: no callback fires any more, its queued, scheduled and retrying
    jobs are deleted, and workers skip any of its jobs they fetch later. Exits 1 when
    the batch is unknown."""
    confirm_or_refuse(f"Cancel batch {bid}?", yes)
    with opened_app(options) as app:
        result = Batches(app).cancel(bid)
    if as_json:
        print_json({"bid": bid, "cancelled": result.cancelled, "deleted": result.deleted})
    elif result.cancelled:
        click.echo(f"cancelled batch {bid}: {result.deleted} waiting job(s) deleted")
    if not result.cancelled:
        if not as_json:
            click.echo(f"no batch {bid!r}: unknown, or its data expired", err=True)
        raise SystemExit(1)
