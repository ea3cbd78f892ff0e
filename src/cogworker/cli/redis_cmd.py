"""``cogworker redis``: the project's private redis-server (start, stop, status, url).

The server is shared by every cogworker process run from the project folder and keeps its
data in ``.cogworker/redis/`` there; it runs until ``cogworker redis stop``.
"""

from __future__ import annotations

from pathlib import Path

import click

from cogworker.core.errors import EmbeddedRedisError
from cogworker.redis.connection import redact_url
from cogworker.redis.server_state import (
    ensure_project_server,
    project_redis_dir,
    project_server_status,
    stop_project_server,
)

_project_dir_option = click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="The project folder; the server's data lives in .cogworker/redis/ under it.",
)


@click.group("redis")
def redis_group() -> None:
    """Run a private redis-server for this project (no Redis set-up needed).

    Needs a redis-server binary: $COGWORKER_REDIS_SERVER, redis-server on PATH, or
    `pip install 'cogworker[embedded]'`. For production, point cogworker at a real Redis URL.
    """


@redis_group.command("start")
@_project_dir_option
@click.option(
    "--aof/--no-aof",
    default=True,
    show_default=True,
    help="Keep an append-only file (fsync every second) so data survives restarts.",
)
def start_command(project_dir: Path, aof: bool) -> None:
    """Start the project's redis-server, or reuse the running one; say where it runs
    (without its password: `cogworker redis url` prints the URL with it, for scripts)."""
    try:
        url = ensure_project_server(project_dir, appendonly=aof)
    except EmbeddedRedisError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"redis-server running at {redact_url(url)} (for the URL with its password: "
               f"REDIS_URL=$(cogworker redis url))")


@redis_group.command("stop")
@_project_dir_option
def stop_command(project_dir: Path) -> None:
    """Stop the project's redis-server (its data stays in .cogworker/redis/)."""
    stopped = stop_project_server(project_dir)
    if stopped is None:
        click.echo(f"no redis-server was running for {project_dir.absolute()}")
    else:
        click.echo(f"stopped redis-server pid {stopped.pid} at {redact_url(stopped.url)}")


@redis_group.command("status")
@_project_dir_option
def status_command(project_dir: Path) -> None:
    """Say whether the project's redis-server runs; exit code 1 when it does not."""
    state = project_server_status(project_dir)
    if state is None:
        click.echo(f"not running (data folder: {project_redis_dir(project_dir)})")
        click.get_current_context().exit(1)
    click.echo(f"running: pid {state.pid} at {redact_url(state.url)} "
               f"(data folder: {state.data_dir})")


@redis_group.command("url")
@_project_dir_option
def url_command(project_dir: Path) -> None:
    """Print the URL of the project's running redis-server, password included (for
    REDIS_URL=$(cogworker redis url)); exit code 1 when none runs."""
    state = project_server_status(project_dir)
    if state is None:
        raise click.ClickException(
            f"no redis-server is running for {project_dir.absolute()}; "
            "start one with `cogworker redis start`"
        )
    click.echo(state.url)
