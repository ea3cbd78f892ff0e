"""Calling user hooks the forgiving way the original does."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def call_with_arity(func: Callable[..., Any], *args: Any) -> Any:
    """Call ``func`` with as many leading ``args`` as it accepts (all for ``*args``)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return func(*args)
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return func(*args)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return func(*args[: len(positional)])
