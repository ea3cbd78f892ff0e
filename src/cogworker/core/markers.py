"""The pluggy markers for the ``cogworker`` project, typed for mypy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import pluggy

PROJECT_NAME = "cogworker"

F = TypeVar("F", bound=Callable[..., Any])

_spec = pluggy.HookspecMarker(PROJECT_NAME)
_impl = pluggy.HookimplMarker(PROJECT_NAME)


def hookspec(
    function: F | None = None,
    *,
    firstresult: bool = False,
    historic: bool = False,
) -> Any:
    """Mark a function as a cogworker hook specification."""
    return _spec(function, firstresult=firstresult, historic=historic)


def hookimpl(
    function: F | None = None,
    *,
    tryfirst: bool = False,
    trylast: bool = False,
    wrapper: bool = False,
    specname: str | None = None,
) -> Any:
    """Mark a function as a cogworker hook implementation (``cogworker.hookimpl``)."""
    return _impl(function, tryfirst=tryfirst, trylast=trylast, wrapper=wrapper, specname=specname)


def typed_hookimpl(function: F) -> F:
    """``@hookimpl`` without options, keeping the function's type for mypy."""
    return cast(F, _impl(function))
