"""The ``metrics`` plugin's options (``plugin_options.metrics.<option>``), validated once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from cogworker.core.errors import ConfigurationError
from cogworker.core.value_record import ValueRecord

PLUGIN_NAME: Final = "metrics"

DEFAULT_MINUTE_RETENTION: Final = 8 * 3600
DEFAULT_HOUR_RETENTION: Final = 8 * 86400
DEFAULT_FLUSH_INTERVAL: Final = 1.0
DEFAULT_MAX_SERIES: Final = 100
DEFAULT_MAX_QUEUES: Final = 100


class MetricsOptions(ValueRecord):
    """``plugin_options.metrics``.

    ``minute_retention`` / ``hour_retention``: seconds a minute's / an hour's figures are
    kept (8 hours / 8 days): windows up to ``minute_retention`` are read minute by minute,
    longer ones hour by hour. ``flush_interval``: seconds between two writes of a process's
    gathered figures. ``max_series``: (class, queue) series the exporter shows one by one,
    and the most ``cogworker metrics`` lists, the rest summed as ``other``;
    ``max_queues``: the same for the exporter's queue gauges. A ValueRecord: its module is
    imported at every first push.
    """

    _fields = ("minute_retention", "hour_retention", "flush_interval", "max_series",
                 "max_queues")
    __slots__ = _fields
    minute_retention: int
    hour_retention: int
    flush_interval: float
    max_series: int
    max_queues: int

    def __init__(self, minute_retention: int = DEFAULT_MINUTE_RETENTION,
                 hour_retention: int = DEFAULT_HOUR_RETENTION,
                 flush_interval: float = DEFAULT_FLUSH_INTERVAL,
                 max_series: int = DEFAULT_MAX_SERIES,
                 max_queues: int = DEFAULT_MAX_QUEUES) -> None:
        super().__init__(minute_retention, hour_retention, flush_interval, max_series,
                         max_queues)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], source: str | None = None) -> MetricsOptions:
        """Read the options; an unknown name or a bad value is a ConfigurationError."""
        names = list(cls._fields)
        unknown = sorted(set(raw) - set(names))
        if unknown:
            raise ConfigurationError(
                f"plugin_options.metrics.{unknown[0]}", raw[unknown[0]],
                f"a known option of the metrics plugin: {', '.join(names)}", source)
        values: dict[str, Any] = {}
        for name in ("minute_retention", "hour_retention", "max_series", "max_queues"):
            if name in raw:
                values[name] = _positive_int(name, raw[name], source)
        if "flush_interval" in raw:
            interval = raw["flush_interval"]
            if (isinstance(interval, bool) or not isinstance(interval, (int, float))
                    or not interval > 0):
                raise ConfigurationError("plugin_options.metrics.flush_interval", interval,
                                         "a number of seconds above 0", source)
            values["flush_interval"] = float(interval)
        options = cls(**values)
        if options.hour_retention < options.minute_retention:
            raise ConfigurationError(
                "plugin_options.metrics.hour_retention", options.hour_retention,
                f"at least minute_retention ({options.minute_retention} s): hours are "
                "read for the windows minutes no longer cover", source)
        return options


def _positive_int(name: str, value: object, source: str | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"plugin_options.metrics.{name}", value,
                                 "a whole number of 1 or more", source)
    return value


def metrics_options(settings_options: Mapping[str, Mapping[str, Any]],
                    source: str | None = None) -> MetricsOptions:
    """The options from a settings' ``plugin_options`` mapping (defaults when unset)."""
    return MetricsOptions.parse(settings_options.get(PLUGIN_NAME, {}), source)
