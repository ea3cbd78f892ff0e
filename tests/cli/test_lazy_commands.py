"""``cogworker``'s subcommands are imported when they run, not all at start-up.

The table (``cogworker.cli.COMMANDS``) names where each command lives; a typo there would
only fail when that command runs, so every entry is loaded here. Which modules a command
loads is checked in a fresh interpreter, where ``sys.modules`` starts clean.
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from cogworker.cli import COMMANDS, cli
from cogworker.cli.lazy_group import load_command

RESOLVE_RUN = """
import json, sys
import click
from cogworker.cli import cli

before = sorted(sys.modules)
with click.Context(cli) as ctx:
    cli.get_command(ctx, "run")
print(json.dumps([before, sorted(sys.modules)]))
"""


def _command_modules(modules: list[str]) -> set[str]:
    return {name for name in modules if name.startswith("cogworker.cli.")
            and name.endswith("_cmd")}


def test_every_listed_command_loads_under_its_name() -> None:
    with click.Context(cli) as ctx:
        assert cli.list_commands(ctx) == sorted(COMMANDS)
        for name in COMMANDS:
            command = cli.get_command(ctx, name)
            assert isinstance(command, click.Command), name
            assert command.name == ("busy" if name == "workers" else name)
        assert cli.get_command(ctx, "no-such-command") is None
    # kept empty, so that the generated command reference (mkdocs-click) lists them all
    assert cli.commands == {}


def test_running_one_command_imports_only_its_module() -> None:
    done = subprocess.run([sys.executable, "-c", RESOLVE_RUN], capture_output=True,
                          text=True, check=True, timeout=60)
    before, after = json.loads(done.stdout)
    assert _command_modules(before) == set()  # importing cogworker.cli loads no command
    assert _command_modules(after) == {"cogworker.cli.run_cmd"}
    assert "croniter" not in after  # the cron commands' dependency


def test_a_table_entry_that_names_no_command_is_refused_with_its_name() -> None:
    with pytest.raises(TypeError, match=r"cogworker.cli:COMMANDS is not a click command"):
        load_command("cogworker.cli:COMMANDS")
    with pytest.raises(ModuleNotFoundError):
        load_command("cogworker.cli.no_such_cmd:command")
