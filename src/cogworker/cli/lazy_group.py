"""A click group whose subcommands are imported only when one is needed.

Importing every command's module at start-up cost each ``cogworker`` call 41 modules and a
long-running worker 2.4 MiB of memory it never uses (croniter and dateutil for the cron
commands, the dashboard's and the exporter's helpers, ...). Here each subcommand is named
by where it lives, ``"package.module:attribute"``, and imported on first use: running a
command imports that command's module, and listing the commands (``--help``, the generated
command reference) imports all of them.

The loaded commands are not added to ``Group.commands``, which stays empty: tools that
read that mapping when it is not empty and call :meth:`list_commands` otherwise (the docs'
mkdocs-click) then see every command, not only those loaded so far.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Mapping
from typing import Any

import click


class LazyGroup(click.Group):
    """``click.Group`` over ``{name: "module:attribute"}``; the attribute is the command."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._targets = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._targets})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self._targets.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        return load_command(target)  # imported once: sys.modules keeps the module


def load_command(target: str) -> click.Command:
    """The command at ``"module:attribute"``; a target that names no command is a bug of
    the table that lists it, reported with its name."""
    command = pkgutil.resolve_name(target)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command (cogworker's command table)")
    return command
