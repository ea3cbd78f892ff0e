"""What every command shares: finding the app, turning flags into settings, and errors."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from cogworker.app import App
from cogworker.cli.app_loading import find_app, import_path, load_app_attr
from cogworker.core.errors import (
    BrokerAuthenticationError,
    BrokerUnavailableError,
    CogworkerError,
    NoRedisError,
)
from cogworker.core.registry import deferred_option_checks

F = TypeVar("F", bound=Callable[..., Any])

USAGE_EXIT = 2


class CogworkerUsageError(click.UsageError):
    """A usage problem: one line on stderr, exit status 2."""

    exit_code = USAGE_EXIT


def app_options(func: F) -> F:
    """Add the options that locate the app and its Redis to a command."""
    decorators = [
        click.option("-A", "--app", "app_path", metavar="MODULE:ATTR",
                     help="The App to load, e.g. myproject.jobs:app (attr defaults to 'app')."),
        click.option("-r", "--require", "require", multiple=True, metavar="PATH",
                     help="A file or package to import first (repeatable)."),
        click.option("-C", "--config", "config", type=click.Path(dir_okay=False, path_type=Path),
                     help="Config file: cogworker.toml, pyproject.toml or the original's YAML."),
        click.option("--redis-url", "redis_url", metavar="URL", help="Redis URL."),
        click.option("--namespace", "namespace", metavar="NS", help="Key namespace."),
        click.option("-e", "--environment", "environment", metavar="ENV",
                     help="Exported to the app as APP_ENV before it is imported."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


APP_OPTION_NAMES = ("app_path", "require", "config", "redis_url", "namespace", "environment")


def obtain_app(
    *,
    app_path: str | None = None,
    require: Sequence[str] = (),
    config: Path | None = None,
    redis_url: str | None = None,
    namespace: str | None = None,
    environment: str | None = None,
    cli_settings: Mapping[str, Any] | None = None,
    server: bool = False,
) -> App:
    """Import the app and apply every settings source; usage errors exit 2.

    ``server``: whether the command may start the project's private redis-server (``run``
    and ``enqueue`` may; commands that only look or steer never do). Job options declared
    by plugins are checked once the flags are applied, so ``--plugin X`` counts.
    """
    if environment:
        os.environ["APP_ENV"] = environment
    flags = {k: v for k, v in (cli_settings or {}).items() if v is not None}
    for key, value in (("redis_url", redis_url), ("namespace", namespace),
                       ("environment", environment)):
        if value is not None:
            flags[key] = value
    with deferred_option_checks():
        modules: list[Any] = []
        for path in require:
            modules.extend(import_path(path))
        app = load_app_attr(app_path) if app_path else (find_app(modules) or None)
    try:
        app = app or App()
        app.may_start_server = server
        app.configure(config_path=config, cli=flags, cwd=Path.cwd())
        app.hooks  # noqa: B018 -- plugins and the broker URL's scheme: usage errors (exit 2)
    except CogworkerError as exc:
        raise CogworkerUsageError(str(exc)) from exc
    return app


@contextmanager
def opened_app(options: dict[str, Any], *, server: bool = False) -> Iterator[App]:
    """``obtain_app(**options)`` for the length of one command, then closed. A Redis that
    cannot be reached, or that refuses the password, is one line naming where it is set."""
    app = obtain_app(**options, server=server)
    try:
        yield app
    except (BrokerUnavailableError, BrokerAuthenticationError) as exc:
        raise redis_failure(app, exc) from exc
    finally:
        app.close()


def redis_failure(app: App, exc: CogworkerError) -> click.ClickException:
    """The one-line error for a Redis that is away or refuses us (exit status 1)."""
    if isinstance(exc, NoRedisError):
        return click.ClickException(str(exc))
    where = app.redis_location()
    if isinstance(exc, BrokerAuthenticationError):
        return click.ClickException(f"Redis at {where} refused to authenticate: {exc}")
    return click.ClickException(
        f"cannot reach Redis at {where}: {exc}; check that Redis runs there, or fix that "
        "setting")


def handle_errors(func: F) -> F:
    """Turn cogworker errors raised by a command into one line and exit status 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except click.ClickException:
            raise
        except CogworkerError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper  # type: ignore[return-value]


def confirm_or_refuse(question: str, yes: bool) -> None:
    """Ask ``question`` on a terminal; without one, refuse (exit 2) unless ``--yes``."""
    if yes:
        return
    if not stdin_is_interactive():
        raise CogworkerUsageError(
            f"{question.rstrip('?')}: not confirmed, and standard input is not a terminal "
            "to ask; pass --yes to do it without asking")
    if not click.confirm(question, default=False):
        raise click.ClickException("cancelled: nothing was changed")


def stdin_is_interactive() -> bool:
    """Whether a confirmation question can be asked (a test replaces this)."""
    return sys.stdin.isatty()


yes_option = click.option("-y", "--yes", "yes", is_flag=True,
                          help="Do it without asking for confirmation.")


def one_target(value: str | None, everything: bool, action: str, *, name: str,
               every: str = "--all") -> None:
    """Exactly one of a ``name`` argument or the ``every`` flag (usage error otherwise)."""
    if value is not None and everything:
        raise CogworkerUsageError(f"{action}: give either {name} or {every}, not both")
    if value is None and not everything:
        raise CogworkerUsageError(
            f"{action}: missing argument {name}: give {name} (one target) or {every}; "
            "neither was given")
