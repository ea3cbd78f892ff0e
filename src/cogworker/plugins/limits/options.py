"""``plugin_options.limits.*``: leases, and what happens to a job over a limit."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from cogworker.core.errors import ConfigurationError, OverLimit
from cogworker.core.value_record import ValueRecord

PLUGIN_NAME: Final = "limits"
RESCHEDULES_FIELD: Final = OverLimit.RESCHEDULES_FIELD
"""The payload field counting a job's over-limit reschedules (not retries)."""


class LimitsOptions(ValueRecord):
    """The plugin's options, checked at start-up (see ``docs/reference/settings.md``). A
    ValueRecord: its module is imported at every first push.

    * ``lease``: seconds a concurrency slot lives between two renewals, unless the limiter
      says;
    * ``max_reschedules``: over-limit reschedules a job may have; the next over-limit is a
      failure (retried like any other, its count starting again);
    * ``backoff``: seconds before the first reschedule of a job when its limiter cannot
      estimate when room frees (a full concurrent limiter); doubled each reschedule after;
    * ``max_backoff``: the longest wait before a reschedule (the estimate or back-off is
      capped here);
    * ``jitter``: each wait is stretched by a random fraction up to this, so rescheduled
      jobs do not all come back at once.
    """

    _fields = ("lease", "max_reschedules", "backoff", "max_backoff", "jitter")
    __slots__ = _fields
    lease: float
    max_reschedules: int
    backoff: float
    max_backoff: float
    jitter: float

    def __init__(self, lease: float = 60.0, max_reschedules: int = 100, backoff: float = 0.5,
                 max_backoff: float = 10.0, jitter: float = 0.5) -> None:
        super().__init__(lease, max_reschedules, backoff, max_backoff, jitter)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], source: str | None = None) -> LimitsOptions:
        """Read ``plugin_options.limits``; a bad name or value is a ConfigurationError
        naming the option in full."""
        known = list(cls._fields)
        values: dict[str, Any] = {}
        for name, value in raw.items():
            if name not in known:
                raise ConfigurationError(f"plugin_options.{PLUGIN_NAME}.{name}", value,
                                         f"an option of the limits plugin: {', '.join(known)}",
                                         source)
            values[name] = _checked(name, value, source)
        options = cls(**values)
        if options.max_backoff < options.backoff:
            raise ConfigurationError(f"plugin_options.{PLUGIN_NAME}.max_backoff",
                                     options.max_backoff,
                                     f"a number of seconds >= backoff ({options.backoff:g})",
                                     source)
        return options


def _checked(name: str, value: Any, source: str | None) -> Any:
    field = f"plugin_options.{PLUGIN_NAME}.{name}"
    if name == "max_reschedules":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigurationError(field, value, "a whole number >= 0", source)
        return value
    number = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)
    if name == "jitter":
        if not number or value < 0:
            raise ConfigurationError(field, value, "a fraction >= 0 (0.5: up to 50% longer)",
                                     source)
        return float(value)
    if not number or value <= 0:
        raise ConfigurationError(field, value, "a number of seconds > 0", source)
    return float(value)
