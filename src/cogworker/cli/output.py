"""Printing for the admin commands: JSON, aligned tables, durations and times."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import click

json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print JSON instead of a table.")


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [list(headers), *([str(cell) for cell in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths,
                                                                        strict=True)).rstrip())


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"


def seconds(value: float) -> str:
    """A duration for people: 12.5s, 3.2m, 1.5h."""
    if value < 60:
        return f"{value:.1f}s"
    if value < 3600:
        return f"{value / 60:.1f}m"
    return f"{value / 3600:.1f}h"


def iso_time(epoch: object) -> str | None:
    """Epoch seconds as ISO 8601 UTC with milliseconds (``2025-01-01T09:00:00.000Z``), or
    None when ``epoch`` is not a number."""
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)):
        return None
    try:
        moment = dt.datetime.fromtimestamp(float(epoch), dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def relative(epoch: float, now: float) -> str:
    """``in 3.0s`` or ``12.5s ago``."""
    delta = epoch - now
    return f"in {seconds(delta)}" if delta >= 0 else f"{seconds(-delta)} ago"
