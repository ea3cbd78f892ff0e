"""The pluggy markers for the ``cogworker`` project, typed for mypy."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, TypeVar, overload

import pluggy

PROJECT_NAME = "cogworker"

F = TypeVar("F", bound=Callable[..., Any])

_spec = pluggy.HookspecMarker(PROJECT_NAME)
_impl = pluggy.HookimplMarker(PROJECT_NAME)

PAYLOAD_KEYS = "cogworker_payload_keys"
"""The attribute naming the payload keys a hook implementation or a server middleware is
for (``hookimpl(for_jobs_with=...)``, :func:`cogworker.core.middleware.for_jobs_with`)."""


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
    for_jobs_with: Collection[str] = (),
) -> Callable[[F], F]: ...


def hookimpl(
    function: Any = None,
    /,
    *,
    tryfirst: bool = False,
    trylast: bool = False,
    wrapper: bool = False,
    specname: str | None = None,
    for_jobs_with: Collection[str] = (),
) -> Any:
    """Mark a function as a cogworker hook implementation (``cogworker.hookimpl``).

    ``for_jobs_with``: payload keys, and the promise that the implementation does nothing
    for a job holding none of them; a hook called with a ``job`` then skips it for such
    jobs, which pay nothing for the plugin (pluggy's own dispatch, with tracing on or a
    wrapper registered, still calls it).
    """
    mark = _impl(None, tryfirst=tryfirst, trylast=trylast, wrapper=wrapper, specname=specname)

    def apply(target: F) -> F:
        if for_jobs_with:
            setattr(target, PAYLOAD_KEYS, frozenset(for_jobs_with))
        return mark(target)

    return apply if function is None else apply(function)
