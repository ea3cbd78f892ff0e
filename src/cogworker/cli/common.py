"""What every command shares: finding the app and turning flags into settings."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from cogworker.app import App
from cogworker.core.errors import CogworkerError

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


def _import_path(path: str) -> list[Any]:
    """Import a file or package directory; returns the imported module."""
    target = Path(path).resolve()
    if not target.exists():
        raise CogworkerUsageError(f"-r/--require: {path} does not exist")
    if target.is_dir():
        init = target / "__init__.py"
        if not init.exists():
            raise CogworkerUsageError(f"-r/--require: {path} is a directory without __init__.py")
        sys.path.insert(0, str(target.parent))
        return [importlib.import_module(target.name)]
    sys.path.insert(0, str(target.parent))
    return [importlib.import_module(target.stem)]


def _load_app_attr(app_path: str) -> App:
    module_name, _, attr = app_path.partition(":")
    attr = attr or "app"
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CogworkerUsageError(f"-A/--app: cannot import {module_name!r}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise CogworkerUsageError(f"-A/--app: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if callable(target) and not isinstance(target, App):
        target = target()
    if not isinstance(target, App):
        raise CogworkerUsageError(
            f"-A/--app: {app_path} is a {type(target).__name__}, not a cogworker.App"
        )
    return target


def _find_app(modules: Sequence[Any]) -> App | None:
    for module in modules:
        found = [v for v in vars(module).values() if isinstance(v, App)]
        if found:
            return found[0]
    return None


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
    """Import the app and apply every settings source; usage errors exit 2."""
    if environment:
        os.environ["APP_ENV"] = environment
    flags = {k: v for k, v in (cli_settings or {}).items() if v is not None}
    for key, value in (("redis_url", redis_url), ("namespace", namespace),
                       ("environment", environment)):
        if value is not None:
            flags[key] = value
    try:
        modules: list[Any] = []
        for path in require:
            modules.extend(_import_path(path))
        app = _load_app_attr(app_path) if app_path else (_find_app(modules) or App())
        app.server_process = server
        app.configure(config_path=config, cli=flags, cwd=Path.cwd())
    except CogworkerError as exc:
        raise CogworkerUsageError(str(exc)) from exc
    return app


@contextmanager
def opened_app(options: dict[str, Any]) -> Iterator[App]:
    """``obtain_app(**options)`` for the length of one command, then closed."""
    app = obtain_app(**options)
    try:
        yield app
    finally:
        app.close()


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
