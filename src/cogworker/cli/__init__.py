"""The ``cogworker`` command. Parsing and wiring only; the logic lives elsewhere.

Each subcommand's module is imported when that command runs (:mod:`cogworker.cli.lazy_group`):
``cogworker run`` loads the worker, not the dashboard or the cron tools.
"""

from __future__ import annotations

import click

from cogworker.__about__ import __version__
from cogworker.cli.lazy_group import LazyGroup

COMMANDS: dict[str, str] = {
    "run": "cogworker.cli.run_cmd:run_command",
    "enqueue": "cogworker.cli.enqueue_cmd:enqueue_command",
    "plugins": "cogworker.cli.plugins_cmd:plugins_command",
    "redis": "cogworker.cli.redis_cmd:redis_group",
    "locks": "cogworker.cli.locks_cmd:locks_group",
    "cron": "cogworker.cli.cron_cmd:cron_group",
    "queues": "cogworker.cli.queues_cmd:queues_group",
    "busy": "cogworker.cli.busy_cmd:busy_command",
    "workers": "cogworker.cli.busy_cmd:busy_command",  # another name for busy
    "retry": "cogworker.cli.sets_cmd:retry_group",
    "dead": "cogworker.cli.sets_cmd:dead_group",
    "scheduled": "cogworker.cli.sets_cmd:scheduled_group",
    "stats": "cogworker.cli.admin_cmd:stats_command",
    "ctl": "cogworker.cli.admin_cmd:ctl_group",
    "web": "cogworker.cli.web_cmd:web_command",
    "status": "cogworker.cli.status_cmd:status_command",
    "history": "cogworker.cli.history_cmd:history_command",
    "health": "cogworker.cli.health_cmd:health_command",
    "metrics": "cogworker.cli.metrics_cmd:metrics_group",
    "cancel": "cogworker.cli.cancel_cmd:cancel_command",
    "limits": "cogworker.cli.limits_cmd:limits_group",
    "batches": "cogworker.cli.batches_cmd:batches_group",
    "version": "cogworker.cli:version_command",
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
