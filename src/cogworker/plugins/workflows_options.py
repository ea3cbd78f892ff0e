"""The ``workflows`` plugin's options (``plugin_options.workflows.*``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cogworker.core.broker.results import DEFAULT_RESULT_TTL
from cogworker.core.errors import ConfigurationError
from cogworker.core.value_record import ValueRecord

PLUGIN_NAME = "workflows"
OPTIONS_KEY = f"{PLUGIN_NAME}.options"
"""Where ``cogworker_configure`` keeps the parsed options in ``app.extras``."""
OPTION_NAMES = ("result_ttl",)


class WorkflowOptions(ValueRecord):
    """``plugin_options["workflows"]``: ``result_ttl``, seconds a workflow's step results
    and its record live (renewed by every finished step). A ValueRecord: its module is
    imported at every first push."""

    _fields = ("result_ttl",)
    __slots__ = _fields
    result_ttl: float

    def __init__(self, result_ttl: float = DEFAULT_RESULT_TTL) -> None:
        super().__init__(result_ttl)

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
