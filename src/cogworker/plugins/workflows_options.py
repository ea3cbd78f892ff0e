"""The ``workflows`` plugin's options (``plugin_options.workflows.*``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from cogworker.core.broker.results import DEFAULT_RESULT_TTL
from cogworker.core.errors import ConfigurationError

PLUGIN_NAME = "workflows"
OPTIONS_KEY = f"{PLUGIN_NAME}.options"
"""Where ``cogworker_configure`` keeps the parsed options in ``app.extras``."""
OPTION_NAMES = ("result_ttl",)


class WorkflowOptions(NamedTuple):
    """``plugin_options["workflows"]``: ``result_ttl``, seconds a workflow's step results
    and its record live (renewed by every finished step). A NamedTuple: made at every
    first push, where a dataclass costs six times more to create."""

    result_ttl: float = DEFAULT_RESULT_TTL

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> WorkflowOptions:
        """Read the options; an unknown name or a bad value is a ConfigurationError."""
        unknown = sorted(set(raw) - set(OPTION_NAMES))
        if unknown:
            raise ConfigurationError(f"plugin_options.{PLUGIN_NAME}.{unknown[0]}",
                                     raw[unknown[0]], f"a known option of the workflows "
                                     f"plugin: {', '.join(OPTION_NAMES)}")
        ttl = raw.get("result_ttl", DEFAULT_RESULT_TTL)
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl >= 1:
            raise ConfigurationError(f"plugin_options.{PLUGIN_NAME}.result_ttl", ttl,
                                     "a number of seconds >= 1 (how long workflow results "
                                     "live)")
        return cls(result_ttl=float(ttl))
