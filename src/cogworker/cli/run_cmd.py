"""``cogworker run``: start a worker process (or, with ``--watch``, a restarting one)."""

from __future__ import annotations

import queue
import sys
from pathlib import Path
from typing import Any

import click

from cogworker.app import App
from cogworker.cli.common import CogworkerUsageError, app_options, handle_errors, obtain_app
from cogworker.cli.logging_setup import configure_logging
from cogworker.core.config_layers import parse_queue_options
from cogworker.core.errors import ConfigurationError, PluginError
from cogworker.core.settings import Settings
from cogworker.worker import signals


def _queues(values: tuple[str, ...]) -> tuple[str, ...] | None:
    if not values:
        return None
    try:
        return parse_queue_options(values)
    except ConfigurationError as exc:
        raise CogworkerUsageError(str(exc)) from exc


def _activate_plugins(app: App) -> None:
    """Resolve the active plugins now, so that a bad ``--plugin`` (or ``COGWORKER_PLUGINS``)
    is a usage error naming the plugin, not a traceback from inside the launcher."""
    try:
        app.hooks  # noqa: B018 -- resolving is the point
    except (PluginError, ConfigurationError) as exc:
        raise CogworkerUsageError(str(exc)) from exc


def _refuse_without_jobs(app: App, app_path: str | None, allow_no_jobs: bool) -> None:
    if len(app.registry) or allow_no_jobs:
        return
    where = f"{app_path} registers none" if app_path else "no app was given"
    raise CogworkerUsageError(
        f"no jobs are registered ({where}): pass -A module:app. A worker without jobs "
        "would take every job off its queues and fail each one; to do that on purpose "
        "(drain queues into retry and dead), pass --allow-no-jobs")


@click.command("run")
@app_options
@click.option("-c", "--concurrency", type=int, help="Processor threads (default 10).")
@click.option("-q", "--queue", "queues", multiple=True, metavar="NAME[,WEIGHT]",
              help="A queue to work, weight = how often it is tried (repeatable).")
@click.option("-t", "--timeout", type=float, help="Seconds to wait for running jobs at stop.")
@click.option("-L", "--logfile", type=click.Path(dir_okay=False), help="Log to this file.")
@click.option("--plugin", "plugins", multiple=True, metavar="NAME|no:NAME",
              help="Activate (or with no: deactivate) a plugin (repeatable).")
@click.option("--log-level", type=click.Choice(
    ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], case_sensitive=False))
@click.option("--log-format", type=click.Choice(["text", "json"]))
@click.option("--burst", is_flag=True,
              help="Exit 0 once the queues are empty and nothing is due (scripts, CI).")
@click.option("--watch", is_flag=True,
              help="Restart the worker when a .py file changes (development; needs "
                   "cogworker[watch]).")
@click.option("--allow-no-jobs", is_flag=True,
              help="Start even though no job is registered (drains queues into retry/dead).")
@handle_errors
def run_command(
    app_path: str | None, require: tuple[str, ...], config: Path | None, redis_url: str | None,
    namespace: str | None, environment: str | None, concurrency: int | None,
    queues: tuple[str, ...], timeout: float | None, logfile: str | None,
    plugins: tuple[str, ...], log_level: str | None, log_format: str | None,
    burst: bool, watch: bool, allow_no_jobs: bool,
) -> None:
    """Run a worker: fetch jobs from the queues and perform them until stopped."""
    flags: dict[str, Any] = {
        "concurrency": concurrency, "queues": _queues(queues), "timeout": timeout,
        "logfile": logfile, "plugins": plugins or None, "log_level": log_level,
        "log_format": log_format,
    }
    if watch:
        _supervise(flags, config)
    # Handlers go in before the app is imported (which can take seconds in a large project),
    # so a TERM at any point from here on is a clean stop with exit 0.
    tokens: signals.TokenQueue = queue.SimpleQueue()
    early = signals.install(tokens)
    try:
        app = obtain_app(app_path=app_path, require=require, config=config,
                         redis_url=redis_url, namespace=namespace, environment=environment,
                         cli_settings=flags, server=True)
        _refuse_without_jobs(app, app_path, allow_no_jobs)
        _activate_plugins(app)
        _configure_logging(app.settings)
        from cogworker.worker.launcher import Launcher

        code = Launcher(app, tokens, burst=burst).run()
    finally:
        early.restore()
    sys.exit(code)


def _supervise(flags: dict[str, Any], config: Path | None) -> None:
    """``--watch``: this process only watches; a child ``cogworker run`` does the work."""
    from cogworker.cli.watch import child_command, supervise
    from cogworker.core.config_sources import load_settings

    try:
        settings = load_settings(config_path=config, cli=flags)
    except ConfigurationError as exc:
        raise CogworkerUsageError(str(exc)) from exc
    _configure_logging(settings)
    sys.exit(supervise(child_command(sys.argv[1:]), Path.cwd(), settings.timeout))


def _configure_logging(settings: Settings) -> None:
    try:
        configure_logging(settings.log_level, settings.log_format, settings.logfile)
    except OSError as exc:
        raise CogworkerUsageError(
            f"cannot open the log file {settings.logfile} for appending ({exc.strerror}); "
            "create its folder or set -L/--logfile to another path") from exc
