"""``plugin_options.history.*``: what the ``history`` plugin keeps, and for how long."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from cogworker.core.broker import HistoryRetention
from cogworker.core.errors import ConfigurationError

PLUGIN_NAME: Final = "history"
DAY: Final = 86_400


@dataclass(frozen=True, slots=True)
class HistoryOptions:
    """The plugin's options, checked at start-up (see ``docs/reference/settings.md``)."""

    retention_days: float = 30
    """Records older than this many days are trimmed (applied on every write)."""
    max_entries: int = 50_000
    """At most this many records are kept, the newest."""
    daily_stats_retention_days: float = 400
    """A day's success/failed counts live this many days after their last write."""
    args_max_bytes: int = 1024
    """A record keeps the arguments' JSON text up to this many bytes (cut on a character
    boundary, the record then says ``args_truncated``)."""
    backtrace_max_lines: int = 200
    """A failure keeps the first this-many lines of its traceback."""
    backtrace_max_bytes: int = 16_384
    """... and at most this many bytes of them (whole lines; a longer single line is cut)."""
    max_buffered: int = 10_000
    """Records a process holds while the broker cannot take them; beyond, the oldest go."""

    @property
    def retention(self) -> HistoryRetention:
        return HistoryRetention(max_age=self.retention_days * DAY, max_entries=self.max_entries,
                                daily_ttl=self.daily_stats_retention_days * DAY)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], source: str | None = None) -> HistoryOptions:
        """Read ``plugin_options.history``; a bad name or value is a ConfigurationError
        naming the option in full."""
        known = {field.name: field for field in fields(cls)}
        values: dict[str, Any] = {}
        for name, value in raw.items():
            if name not in known:
                raise ConfigurationError(
                    f"plugin_options.{PLUGIN_NAME}.{name}", value,
                    f"an option of the history plugin: {', '.join(known)}", source)
            values[name] = _checked(name, value, known[name].type == "int", source)
        return cls(**values)


_MINIMUMS: Final = {"args_max_bytes": 2, "backtrace_max_lines": 0, "backtrace_max_bytes": 0}


def _checked(name: str, value: Any, whole: bool, source: str | None) -> Any:
    if isinstance(value, bool):
        ok = False
    elif whole:
        ok = isinstance(value, int) and value >= _MINIMUMS.get(name, 1)
    else:
        ok = isinstance(value, (int, float)) and value > 0
    if not ok:
        accepted = (f"a whole number >= {_MINIMUMS.get(name, 1)}" if whole
                    else "a number of days > 0")
        raise ConfigurationError(f"plugin_options.{PLUGIN_NAME}.{name}", value, accepted,
                                 source)
    return value
