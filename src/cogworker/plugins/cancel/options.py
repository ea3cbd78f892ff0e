"""The ``cancel`` plugin's options (``plugin_options.cancel.*``) and its job option."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from cogworker.core.errors import ConfigurationError
from cogworker.core.value_record import ValueRecord

PLUGIN_NAME: Final = "cancel"
DEFAULT_TTL: Final = 24 * 3600.0
"""Seconds a cancellation is kept (a job recovered or retried within them does not run)."""
DEFAULT_REFRESH_INTERVAL: Final = 30.0
"""Seconds between two re-reads of every cancellation by a worker: the backstop for an
announcement it missed (a reconnection)."""
OPTION_NAMES: Final = ("ttl", "refresh_interval")
CANCEL_MODES: Final = ("flag", "raise")
"""The ``cancel`` job option: ``flag`` (the default: a sync job sees ``job.cancelled()``
turn true) or ``raise`` (``JobCancelled`` is also raised in its thread)."""


def _seconds(raw: Mapping[str, Any], name: str, default: float, what: str) -> float:
    value = raw.get(name, default)
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or not value > 0):
        raise ConfigurationError(f"plugin_options.cancel.{name}", value,
                                 f"a number of seconds > 0 ({what})")
    return float(value)


class CancelOptions(ValueRecord):
    """``plugin_options["cancel"]``: ``ttl`` (seconds a cancellation is kept) and
    ``refresh_interval`` (seconds between a worker's re-reads of them). A ValueRecord: its
    module is imported at every first push."""

    _fields = ("ttl", "refresh_interval")
    __slots__ = _fields
    ttl: float
    refresh_interval: float

    def __init__(self, ttl: float = DEFAULT_TTL,
                 refresh_interval: float = DEFAULT_REFRESH_INTERVAL) -> None:
        super().__init__(ttl, refresh_interval)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> CancelOptions:
        """Read the options; an unknown name or a bad value is a ConfigurationError."""
        unknown = sorted(set(raw) - set(OPTION_NAMES))
        if unknown:
            raise ConfigurationError(f"plugin_options.cancel.{unknown[0]}", raw[unknown[0]],
                                     f"a known option of the cancel plugin: "
                                     f"{', '.join(OPTION_NAMES)}")
        return cls(ttl=_seconds(raw, "ttl", DEFAULT_TTL, "how long a cancellation is kept"),
                   refresh_interval=_seconds(raw, "refresh_interval",
                                             DEFAULT_REFRESH_INTERVAL,
                                             "how often a worker re-reads the cancellations"))


def is_cancel_mode(value: object) -> bool:
    return value is None or value in CANCEL_MODES
