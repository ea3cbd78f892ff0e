"""The ``cogworker`` command. Parsing and wiring only; the logic lives elsewhere.

Each subcommand's module is imported when that command runs (:mod:`cogworker.cli.lazy_group`):
``cogworker run`` loads the worker, not the dashboard or the cron tools.
"""

from __future__ import annotations

import click

from cogworker.__about__ import __version__
from cogworker.cli.lazy_group import LazyGroup

_PACKAGE = "cogworker.cli"
COMMANDS: dict[str, str] = {
    "run": f"{_PACKAGE}.run_cmd:run_command",
    "enqueue": f"{_PACKAGE}.enqueue_cmd:enqueue_command",
    "plugins": f"{_PACKAGE}.plugins_cmd:plugins_command",
    "redis": f"{_PACKAGE}.redis_cmd:redis_group",
    "locks": f"{_PACKAGE}.locks_cmd:locks_group",
    "cron": f"{_PACKAGE}.cron_cmd:cron_group",
    "queues": f"{_PACKAGE}.queues_cmd:queues_group",
    "busy": f"{_PACKAGE}.busy_cmd:busy_command",
    "workers": f"{_PACKAGE}.busy_cmd:busy_command",  # another name for busy
    "retry": f"{_PACKAGE}.sets_cmd:retry_group",
    "dead": f"{_PACKAGE}.sets_cmd:dead_group",
    "scheduled": f"{_PACKAGE}.sets_cmd:scheduled_group",
    "stats": f"{_PACKAGE}.admin_cmd:stats_command",
    "ctl": f"{_PACKAGE}.admin_cmd:ctl_group",
    "web": f"{_PACKAGE}.web_cmd:web_command",
    "status": f"{_PACKAGE}.status_cmd:status_command",
    "history": f"{_PACKAGE}.history_cmd:history_command",
    "health": f"{_PACKAGE}.health_cmd:health_command",
    "metrics": f"{_PACKAGE}.metrics_cmd:metrics_group",
    "cancel": f"{_PACKAGE}.cancel_cmd:cancel_command",
    "limits": f"{_PACKAGE}.limits_cmd:limits_group",
    "batches": f"{_PACKAGE}.batches_cmd:batches_group",
    "version": f"{_PACKAGE}:version_command",
}
"""Every subcommand of ``cogworker``: its name and where its click command lives."""


@click.group(cls=LazyGroup, lazy_commands=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="cogworker")
def cli() -> None:
    """cogworker: background jobs on Redis that never lose a job."""


@click.command("version")
def version_command() -> None:
    """Print the version."""
    click.echo(f"cogworker {__version__}")


def main() -> None:
    cli(prog_name="cogworker")
