"""The ``cogworker`` command. Parsing and wiring only; the logic lives elsewhere."""

from __future__ import annotations

import click

from cogworker.__about__ import __version__
from cogworker.cli.admin_cmd import ADMIN_COMMANDS
from cogworker.cli.batches_cmd import batches_group
from cogworker.cli.busy_cmd import busy_command
from cogworker.cli.cron_cmd import cron_group
from cogworker.cli.enqueue_cmd import enqueue_command
from cogworker.cli.health_cmd import health_command
from cogworker.cli.history_cmd import history_command
from cogworker.cli.locks_cmd import locks_group
from cogworker.cli.metrics_cmd import metrics_group
from cogworker.cli.plugins_cmd import plugins_command
from cogworker.cli.queues_cmd import queues_group
from cogworker.cli.redis_cmd import redis_group
from cogworker.cli.run_cmd import run_command
from cogworker.cli.sets_cmd import SET_COMMANDS
from cogworker.cli.status_cmd import status_command
from cogworker.cli.web_cmd import web_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="cogworker")
def cli() -> None:
    """cogworker: background jobs on Redis that never lose a job."""


@cli.command("version")
def version_command() -> None:
    """Print the version."""
    click.echo(f"cogworker {__version__}")


for command in (run_command, enqueue_command, plugins_command, redis_group, locks_group, cron_group,
                queues_group, busy_command, *SET_COMMANDS, *ADMIN_COMMANDS, web_command,
                status_command, history_command, health_command, metrics_group,
                batches_group):
    cli.add_command(command)
cli.add_command(busy_command, "workers")


def main() -> None:
    cli(prog_name="cogworker")
