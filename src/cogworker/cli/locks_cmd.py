"""``cogworker locks list|clear``: see and clear unique-job locks.

Parsing and printing only: the work is done by :mod:`cogworker.plugins.unique_admin`.
"""

from __future__ import annotations

import json
from typing import Any

import click

from cogworker.cli.common import (
    app_options,
    confirm_or_refuse,
    handle_errors,
    one_target,
    opened_app,
    yes_option,
)
from cogworker.plugins.unique_admin import LockInfo, clear_lock, clear_orphaned, list_locks


def _ttl_text(ttl: float | None) -> str:
    if ttl is None:
        return "never"
    if ttl < 60:
        return f"{ttl:.0f}s"
    if ttl < 3600:
        return f"{ttl / 60:.1f}m"
    return f"{ttl / 3600:.1f}h"


def _print_table(locks: list[LockInfo]) -> None:
    rows = [["KEY", "KIND", "OWNER", "TTL", "JOB", "WHERE"]]
    for lock in locks:
        where = f"{lock.where} (orphaned)" if lock.orphaned else lock.where
        rows.append([lock.key, lock.kind, lock.owner, _ttl_text(lock.ttl), lock.job, where])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in
                             zip(row, widths, strict=True)).rstrip())


@click.group("locks")
def locks_group() -> None:
    """Unique-job locks: which job holds each one, and clearing stuck ones."""


@locks_group.command("list")
@app_options
@click.option("--job", "job_name", metavar="NAME",
              help="Only locks held by jobs of this name (locks whose owner exists nowhere "
                   "have no known name and are left out).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@handle_errors
def list_command(job_name: str | None, as_json: bool, **options: Any) -> None:
    """List unique locks: key, owner jid, TTL, and where the owner job is now."""
    with opened_app(options) as app:
        locks = list_locks(app, job=job_name)
    if as_json:
        click.echo(json.dumps([lock.to_dict() for lock in locks], indent=2, ensure_ascii=False))
        return
    if not locks:
        click.echo("no unique locks" + (f" held by {job_name} jobs" if job_name else ""))
        return
    _print_table(locks)
    orphaned = sum(lock.orphaned for lock in locks)
    click.echo(f"{len(locks)} lock(s), {orphaned} orphaned"
               + (" (clear them with `cogworker locks clear --orphaned`)" if orphaned else ""))


@locks_group.command("clear")
@app_options
@click.argument("key", required=False)
@click.option("--orphaned", is_flag=True,
              help="Clear every lock whose owner job exists nowhere (or is dead).")
@yes_option
@handle_errors
def clear_command(key: str | None, orphaned: bool, yes: bool, **options: Any) -> None:
    """Clear the lock KEY (full key or the digest part), or every orphaned lock (--orphaned,
    asks first unless --yes)."""
    one_target(key, orphaned, "locks clear", name="KEY", every="--orphaned")
    with opened_app(options) as app:
        if key is None:
            orphans = sum(lock.orphaned for lock in list_locks(app))
            confirm_or_refuse(f"Clear {orphans} orphaned lock(s)?", yes)
            cleared = clear_orphaned(app)
            click.echo(f"cleared {cleared} orphaned lock(s)")
        elif clear_lock(app, key):
            click.echo(f"cleared {key}")
        else:
            click.echo(f"no lock {key} (already released or expired)")
