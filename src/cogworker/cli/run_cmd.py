"""``cogworker run``: start a worker process (or, with ``--watch``, a restarting one)."""

from __future__ import annotations

import queue
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from cogworker.app import App
from cogworker.cli.common import CogworkerUsageError, app_options, handle_errors, obtain_app
from cogworker.cli.logging_setup import configure_logging
from cogworker.cli.processes import STOP_MARGIN, child_command, process_count
from cogworker.core.config_layers import parse_queue_options
from cogworker.core.cpu_affinity import ACCEPTED as CPU_AFFINITY_ACCEPTED
from cogworker.core.cpu_affinity import CpuListError
from cogworker.core.cpu_affinity import parse as parse_cpu_affinity
from cogworker.core.errors import ConfigurationError, PluginError
from cogworker.core.settings import Settings
from cogworker.supervisor import lineage
from cogworker.supervisor.child_plugin import attach as attach_process_plugin
from cogworker.worker import signals
from cogworker.worker.cpu_pinning import planned_cpu
from cogworker.worker.pidfile import PidfileError, pidfile


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


def _cpu_affinity_option(ctx: click.Context, param: click.Parameter,
                         value: str | None) -> str | None:
    """The ``--cpu-affinity`` callback: the syntax, checked before the app is imported."""
    if value is not None:
        try:
            parse_cpu_affinity(value)
        except CpuListError as exc:
            raise click.BadParameter(f"{value!r}: {exc}; give {CPU_AFFINITY_ACCEPTED}") \
                from None
    return value


def _check_cpu_affinity(settings: Settings) -> None:
    """What only this host can say about ``cpu_affinity`` (a platform that cannot pin, a
    listed CPU this process may not use): a usage error before any child or thread starts."""
    try:
        planned_cpu(settings, lineage.slot())
    except ConfigurationError as exc:
        raise CogworkerUsageError(str(exc)) from exc


def _refuse_without_jobs(app: App, app_path: str | None, allow_no_jobs: bool) -> None:
    if app.registry.app_names() or allow_no_jobs:  # a plugin's own jobs don't count
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
@click.option("--strict", "strict", is_flag=True, default=None,
              help="Strict queue order: always take from the first non-empty queue, in the "
                   "order of -q (no weights).")
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
@click.option("-P", "--processes", callback=process_count, metavar="N|auto",
              help="Run N worker processes under a supervisor ('auto': one per CPU).")
@click.option("--max-memory", type=click.FloatRange(min=0, min_open=True), metavar="MB",
              help="With -P: replace a child whose resident memory exceeds MB, after its "
                   "running jobs.")
@click.option("--max-jobs", type=click.IntRange(min=1), metavar="N",
              help="Start N jobs, then stop gracefully: jobs fetched ahead go back to "
                   "their queues, running ones finish (under -P a replacement takes over).")
@click.option("--pidfile", "pidfile_path", type=click.Path(dir_okay=False, path_type=Path),
              metavar="PATH", help="Write the worker's pid here (the supervisor's with -P), "
              "removed at exit; `cogworker health --pidfile PATH` checks it.")
@click.option("--cpu-affinity", callback=_cpu_affinity_option, metavar="off|auto|LIST",
              help="Pin each worker process to one CPU: 'auto' (from the CPUs it may use) "
                   "or from a LIST such as 0,2 or 0-3 (child k of -P takes the k-th). "
                   "Default off.")
@handle_errors
def run_command(
    app_path: str | None, require: tuple[str, ...], config: Path | None, redis_url: str | None,
    namespace: str | None, environment: str | None, concurrency: int | None,
    queues: tuple[str, ...], strict: bool | None, timeout: float | None, logfile: str | None,
    plugins: tuple[str, ...], log_level: str | None, log_format: str | None,
    burst: bool, watch: bool, allow_no_jobs: bool, processes: int | None,
    max_memory: float | None, max_jobs: int | None, pidfile_path: Path | None,
    cpu_affinity: str | None,
) -> None:
    """Run a worker: fetch jobs from the queues and perform them until stopped."""
    supervised = lineage.adopt() is not None  # a child of -P runs as a plain worker
    _check_process_options(processes, max_memory, watch, burst)
    flags: dict[str, Any] = {
        "concurrency": concurrency, "queues": _queues(queues), "timeout": timeout,
        "strict_queue_order": strict,
        "logfile": logfile, "plugins": plugins or None, "log_level": log_level,
        "log_format": log_format, "cpu_affinity": cpu_affinity,
    }
    if watch:
        _supervise(flags, config)
    if processes is not None and not supervised:
        _run_supervisor(processes, max_memory, app_path, allow_no_jobs,
                        {"app_path": app_path, "require": require, "config": config,
                         "redis_url": redis_url, "namespace": namespace,
                         "environment": environment, "cli_settings": flags}, pidfile_path)
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
        _check_cpu_affinity(app.settings)
        _configure_logging(app.settings)
        from cogworker.worker.launcher import Launcher

        launcher = Launcher(app, tokens, burst=burst)
        attach_process_plugin(launcher, max_jobs)
        # a supervised child runs this same command line: the pidfile is its supervisor's
        with _pidfile(None if supervised else pidfile_path):
            code = launcher.run()
    finally:
        early.restore()
    sys.exit(code)


def _check_process_options(processes: int | None, max_memory: float | None, watch: bool,
                           burst: bool) -> None:
    if processes is not None and (watch or burst):
        raise CogworkerUsageError(
            f"--processes cannot be combined with --{'watch' if watch else 'burst'}: run "
            "one of them")
    if max_memory is not None and processes is None:
        raise CogworkerUsageError(
            "--max-memory needs --processes: only a supervisor can replace a process that "
            "outgrew its memory (add -P 1 for one supervised worker)")


def _run_supervisor(processes: int, max_memory: float | None, app_path: str | None,
                    allow_no_jobs: bool, app_arguments: dict[str, Any],
                    pidfile_path: Path | None) -> None:
    """``-P``: this process supervises; children run this same command line."""
    from cogworker.supervisor import relay
    from cogworker.supervisor.supervisor import Supervisor, SupervisorOptions

    tokens = relay.Tokens()
    early = relay.install(tokens)  # a TERM while the app loads still stops cleanly
    try:
        app = obtain_app(server=True, **app_arguments)
        _refuse_without_jobs(app, app_path, allow_no_jobs)
        _activate_plugins(app)
        _check_cpu_affinity(app.settings)  # once here, not in a crash loop of children
        _configure_logging(app.settings)
        options = SupervisorOptions(processes, app.settings.timeout + STOP_MARGIN,
                                    max_memory)
        with _pidfile(pidfile_path):
            code = Supervisor(app, child_command(), options, tokens).run()
    finally:
        early.restore()
    sys.exit(code)


@contextmanager
def _pidfile(path: Path | None) -> Iterator[None]:
    try:
        with pidfile(path):
            yield
    except PidfileError as exc:
        raise CogworkerUsageError(exc.strerror or str(exc)) from exc


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
