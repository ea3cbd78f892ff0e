"""A click group whose subcommands are imported only when one is needed.

Importing every command's module at start-up cost each ``cogworker`` call 41 modules and a
long-running worker 2.4 MiB of memory it never uses (croniter and dateutil for the cron
commands, the dashboard's and the exporter's helpers, ...). Here each subcommand is named
by where it lives, ``"package.module:attribute"``, and imported on first use: running a
command imports that command's module, and listing the commands (``--help``, the generated
command reference) imports all of them.

The loaded commands are kept apart from ``Group.commands``, which stays empty: tools that
read that mapping when it is not empty and call :meth:`list_commands` otherwise (the docs'
mkdocs-click) then see every command, not only those loaded so far.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click


class LazyGroup(click.Group):
    """``click.Group`` over ``{name: "module:attribute"}``; the attribute is the command."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._targets = dict(lazy_commands)
        self._loaded: dict[str, click.Command] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._targets})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self._targets.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        command = self._loaded.get(cmd_name)
        if command is None:
            command = self._loaded[cmd_name] = load_command(target)
        return command


def load_command(target: str) -> click.Command:
    """The command at ``"module:attribute"``; a target that names no command is a bug of
    the table that lists it, reported with its name."""
    module_name, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module_name), attribute, None)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command (cogworker's command table)")
    return command
