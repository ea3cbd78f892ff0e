"""``cogworker limits [--json]`` and ``cogworker limits reset NAME``: the fleet's limiters.

Parsing and printing only: the work is done by :mod:`cogworker.api.limits`.
"""

from __future__ import annotations

import time
from typing import Any

import click

from cogworker.api.limits import Limits
from cogworker.cli.common import app_options, handle_errors, opened_app
from cogworker.cli.output import plural, print_json, print_table
from cogworker.core.broker import LimiterUsage


def _used(usage: LimiterUsage) -> str:
    spec = usage.spec
    if spec.kind == "bucket":
        return f"{usage.used:.1f}/{spec.limit} tokens"
    return f"{usage.used:g}/{spec.limit}"


def _holders(usage: LimiterUsage, now: float) -> str:
    return ", ".join(f"{holder.identity} jid={holder.jid} (lease {holder.lease_ends - now:.0f}s)"
                     for holder in usage.holders)


def print_limiters(usages: list[LimiterUsage]) -> None:
    if not usages:
        click.echo("no limiters yet (a limiter is listed once a worker first uses it)")
        return
    now = time.time()
    print_table(["NAME", "KIND", "USED", "ACQUIRED", "OVER LIMIT", "HOLDERS"],
                [[usage.spec.name, usage.spec.describe(), _used(usage), usage.acquired,
                  usage.over, _holders(usage, now)] for usage in usages])
    click.echo(plural(len(usages), "limiter"))


@click.group("limits", invoke_without_command=True)
@app_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
@handle_errors
def limits_group(ctx: click.Context, /, as_json: bool, **options: Any) -> None:
    """Fleet-wide limiters: each with its usage (holders and their processes, the count
    in the window, tokens left), and `limits reset NAME`."""
    if ctx.invoked_subcommand is not None:
        return
    with opened_app(options) as app:
        usages = Limits(app).all()
    if as_json:
        print_json([usage.to_dict() for usage in usages])
        return
    print_limiters(usages)


@limits_group.command("reset")
@app_options
@click.argument("name")
@handle_errors
def reset_command(name: str, **options: Any) -> None:
    """Empty limiter NAME (its holders, window count or bucket) and zero its counters."""
    with opened_app(options) as app:
        Limits(app).reset(name)
    click.echo(f"limiter {name!r} reset")
