"""``cogworker run --processes N|auto``: the options, and the supervisor's start.

With ``-P`` the process that was started becomes a supervisor (:mod:`cogworker.
supervisor`): it loads the app (so a bad option or app fails here, with exit status 2,
before any child exists), then starts N children that run the very same command line.
A child knows it is one from its environment and runs as a plain worker.
"""

from __future__ import annotations

import os
import sys
from typing import Final

import click

STOP_MARGIN: Final = 10.0
"""Seconds a child gets past the shutdown ``timeout`` before the supervisor kills it (the
original's 35 s against its 25 s drain)."""


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity where the OS reports it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def process_count(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """The ``-P`` callback: a whole number >= 1, or ``auto`` (the number of CPUs)."""
    if value is None:
        return None
    text = value.strip().lower()
    if text == "auto":
        return cpu_count()
    try:
        number = int(text)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a number of processes: give a whole "
                                 "number >= 1, or 'auto' for one per CPU") from None
    if number < 1:
        raise click.BadParameter(f"{number} processes cannot run jobs: give a whole number "
                                 ">= 1, or 'auto' for one per CPU")
    return number


def child_command() -> list[str]:
    """The command line each child runs: this one, as this interpreter runs it."""
    return [sys.executable, "-m", "cogworker", *sys.argv[1:]]
