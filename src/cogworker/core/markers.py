"""The pluggy markers for the ``cogworker`` project, typed for mypy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

import pluggy

PROJECT_NAME = "cogworker"

F = TypeVar("F", bound=Callable[..., Any])

_spec = pluggy.HookspecMarker(PROJECT_NAME)
_impl = pluggy.HookimplMarker(PROJECT_NAME)


@overload
def hookspec(function: F, /) -> F: ...


@overload
def hookspec(
    function: None = None, /, *, firstresult: bool = False, historic: bool = False
) -> Callable[[F], F]: ...


def hookspec(
    function: Any = None, /, *, firstresult: bool = False, historic: bool = False
) -> Any:
    """Mark a function as a cogworker hook specification (``cogworker.hookspec``)."""
    return _spec(function, firstresult=firstresult, historic=historic)


@overload
def hookimpl(function: F, /) -> F: ...


@overload
def hookimpl(
    function: None = None,
    /,
    *,
    tryfirst: bool = False,
    trylast: bool = False,
    wrapper: bool = False,
    specname: str | None = None,
) -> Callable[[F], F]: ...


def hookimpl(
    function: Any = None,
    /,
    *,
    tryfirst: bool = False,
    trylast: bool = False,
    wrapper: bool = False,
    specname: str | None = None,
) -> Any:
    """Mark a function as a cogworker hook implementation (``cogworker.hookimpl``)."""
    return _impl(function, tryfirst=tryfirst, trylast=trylast, wrapper=wrapper, specname=specname)
