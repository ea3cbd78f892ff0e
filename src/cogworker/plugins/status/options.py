"""The ``status`` plugin's options (``plugin_options.status.*``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cogworker.core.broker.status import DEFAULT_STATUS_TTL
from cogworker.core.errors import ConfigurationError

PLUGIN_NAME = "status"
DEFAULT_TTL = DEFAULT_STATUS_TTL
OPTION_NAMES = ("ttl",)


@dataclass(frozen=True, slots=True)
class StatusOptions:
    """``plugin_options["status"]``: ``ttl``, seconds a status lives after its last write."""

    ttl: float = DEFAULT_TTL

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> StatusOptions:
        """Read the options; an unknown name or a bad value is a ConfigurationError."""
        unknown = sorted(set(raw) - set(OPTION_NAMES))
        if unknown:
            raise ConfigurationError(f"plugin_options.status.{unknown[0]}", raw[unknown[0]],
                                     f"a known option of the status plugin: "
                                     f"{', '.join(OPTION_NAMES)}")
        ttl = raw.get("ttl", DEFAULT_TTL)
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
            raise ConfigurationError("plugin_options.status.ttl", ttl,
                                     "a number of seconds > 0 (how long a status lives after "
                                     "its last write)")
        return cls(ttl=float(ttl))
