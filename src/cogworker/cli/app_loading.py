"""Importing the user's app for a command: ``-A module:attr`` and ``-r path``.

An app that fails to import is a usage error (exit 2): the app's own traceback is printed
on stderr, trimmed to the frames of the user's code (no importlib, click or cogworker
frames), then one ``Error:`` line. Job options declared by plugins are checked after the
command applied its flags (see :func:`cogworker.core.registry.deferred_option_checks`).
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

import cogworker
from cogworker.app import App
from cogworker.core.errors import CogworkerError, indefinite

_PACKAGE_DIR = str(Path(cogworker.__file__).resolve().parent)
_MACHINERY = ("<frozen importlib", "<frozen runpy")


class AppImportError(click.ClickException):
    """The app (or a ``-r`` file) cannot be loaded: one ``Error:`` line (after the app's
    traceback, if it raised), exit status 2."""

    exit_code = 2


def _is_machinery(filename: str) -> bool:
    if filename.startswith(_MACHINERY):
        return True
    resolved = str(Path(filename).resolve()) if not filename.startswith("<") else filename
    return resolved.startswith((_PACKAGE_DIR, str(Path(importlib.__file__).parent)))


def trimmed_traceback(exc: BaseException) -> str:
    """``exc``'s traceback without the frames of the import machinery and cogworker."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if not _is_machinery(frame.filename)]
    text = "".join(traceback.format_exception_only(type(exc), exc))
    if frames:
        text = ("Traceback (most recent call last):\n"
                + "".join(traceback.format_list(frames)) + text)
    return text


@contextmanager
def importing(what: str) -> Iterator[None]:
    """Turn an exception raised while importing ``what`` into :class:`AppImportError`."""
    try:
        yield
    except click.ClickException:
        raise
    except CogworkerError as exc:  # a job declared wrongly: its message names the place
        raise AppImportError(f"{what}: {exc}") from exc
    except Exception as exc:
        click.echo(trimmed_traceback(exc).rstrip("\n"), err=True)
        raise AppImportError(
            f"{what} failed to import: {type(exc).__name__}: {exc} (the traceback is above); "
            "fix the module, then run the command again") from exc


def import_path(path: str) -> list[Any]:
    """Import a file or package directory (``-r``); returns the imported module."""
    target = Path(path).resolve()
    if not target.exists():
        raise AppImportError(f"-r/--require: {path} does not exist")
    if target.is_dir() and not (target / "__init__.py").exists():
        raise AppImportError(f"-r/--require: {path} is a directory without __init__.py")
    sys.path.insert(0, str(target.parent))
    name = target.name if target.is_dir() else target.stem
    with importing(f"-r/--require {path}"):
        return [importlib.import_module(name)]


def load_app_attr(app_path: str) -> App:
    """The App that ``-A module:attr`` names (a callable attribute is called)."""
    module_name, _, attr = app_path.partition(":")
    attr = attr or "app"
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        with importing(f"-A/--app {module_name}"):
            module = importlib.import_module(module_name)
    except AppImportError as exc:
        cause = exc.__cause__
        if isinstance(cause, ModuleNotFoundError) and cause.name == module_name.split(".")[0]:
            raise AppImportError(
                f"-A/--app: no module named {module_name!r} (looked in {Path.cwd()} and on "
                "sys.path); run the command from the project folder or fix the name") from cause
        raise
    target: Any = module
    with importing(f"-A/--app {app_path}"):  # an attribute may be built on access
        for part in attr.split("."):
            if not hasattr(target, part):
                raise AppImportError(f"-A/--app: {module_name!r} has no attribute {attr!r}")
            target = getattr(target, part)
    if callable(target) and not isinstance(target, App):
        with importing(f"-A/--app {app_path}"):
            target = target()
    if not isinstance(target, App):
        raise AppImportError(
            f"-A/--app: {app_path} is {indefinite(type(target).__name__)}, not a cogworker.App")
    return target


def find_app(modules: Sequence[Any]) -> App | None:
    """The first App found in the ``-r`` modules."""
    for module in modules:
        found = [v for v in vars(module).values() if isinstance(v, App)]
        if found:
            return found[0]
    return None
