"""Turn loosely typed setting values into typed ones, and merge layers into ``Settings``.

This is the only place that converts: environment strings, YAML and TOML values, CLI
arguments and ``App(...)`` keywords all pass through :func:`settings_from_layers`. String
forms accepted (see ``docs/reference/settings.md``):

- integers and floats from their decimal text; booleans from true/false, 1/0, yes/no,
  on/off (any case);
- queues from ``"critical:3,default,low:1"`` (``name:weight`` expands to ``weight`` copies),
  from a list of names, ``name:weight`` strings, ``[name, weight]`` pairs or
  ``{name: weight}`` mappings, or from one such mapping;
- plugins from ``"reliable,no:unique"`` or a list;
- plugin options from a JSON object (environment) or a nested table (files).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cogworker.core.errors import ConfigurationError
from cogworker.core.settings import Settings, unknown_setting_error

MAX_QUEUE_WEIGHT = 1000
TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})

_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_WEIGHT_ACCEPTED = f"a queue weight that is an integer from 1 to {MAX_QUEUE_WEIGHT}"
_QUEUES_ACCEPTED = (
    "queues as 'name:weight,name' text, a list of names, 'name:weight' strings or "
    "[name, weight] pairs, or a {name: weight} mapping"
)


@dataclass(frozen=True, slots=True)
class Layer:
    """Setting values from one source; ``source`` names it in error messages.

    ``key_sources`` names a more precise origin for single keys (the environment layer maps
    ``concurrency`` to ``COGWORKER_CONCURRENCY``).
    """

    source: str
    values: Mapping[str, Any]
    key_sources: Mapping[str, str] = field(default_factory=dict)

    def source_of(self, key: str) -> str:
        return self.key_sources.get(key, self.source)


def settings_from_layers(layers: Sequence[Layer]) -> Settings:
    """Merge ``layers`` over the defaults (later layers win) and validate the result.

    ``plugins`` lists are appended layer after layer; ``plugin_options`` merge per plugin
    (a later layer's option replaces that one option); every other field is replaced.
    Errors carry the source of the value that caused them.
    """
    merged: dict[str, Any] = {}
    raw_values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    plugin_origins: list[tuple[str, str]] = []
    for layer in layers:
        for key, raw in layer.values.items():
            source = layer.source_of(key)
            if key not in _CONVERTERS:
                raise unknown_setting_error(key, raw, source)
            value = _CONVERTERS[key](key, raw, source)
            origins[key] = source
            raw_values[key] = raw
            if key == "plugins":
                plugin_origins.extend((change, source) for change in value)
                merged[key] = (*merged.get(key, ()), *value)
            elif key == "plugin_options":
                merged[key] = _merge_plugin_options(merged.get(key, {}), value)
            else:
                merged[key] = value
    try:
        return Settings(**merged)
    except ConfigurationError as exc:
        origin = origins.get(exc.field)
        if exc.field == "plugins":
            origin = next((src for change, src in plugin_origins if change == exc.value), origin)
        # Show the value as the user wrote it ("-3"), not as converted (-3.0).
        as_converted = exc.field in merged and exc.value is merged[exc.field]
        shown = raw_values[exc.field] if as_converted else exc.value
        raise ConfigurationError(exc.field, shown, exc.accepted, origin) from None


def parse_queue_option(option: str, *, source: str = "--queue") -> tuple[str, ...]:
    """Parse one CLI ``-q NAME[,WEIGHT]``: ``"low,3"`` gives ``("low", "low", "low")``."""
    name, comma, weight_text = option.partition(",")
    weight = _parse_weight(weight_text, option, source) if comma else 1
    return _repeat(name.strip(), weight, option, source)


def parse_queue_options(options: Iterable[str], *, source: str = "--queue") -> tuple[str, ...]:
    """Parse repeated CLI ``-q`` options into one weighted tuple, in the order given."""
    return tuple(name for option in options for name in parse_queue_option(option, source=source))


def parse_queues(text: str, *, source: str | None = None) -> tuple[str, ...]:
    """Parse ``"critical:3,default,low:1"`` into names repeated by weight, in order.

    A ``:N`` suffix is a weight only when ``N`` is an integer, so a queue named ``app:high``
    keeps its colon; write ``app:7:1`` for a queue whose name itself ends in ``:7``.
    """
    specs = [spec.strip() for spec in text.split(",")]
    return tuple(name for spec in specs if spec for name in _parse_queue_spec(spec, source))


def format_queues(queues: Sequence[str]) -> str:
    """The inverse of :func:`parse_queues`: runs of one name become ``name:count``."""
    parts: list[str] = []
    index = 0
    while index < len(queues):
        name = queues[index]
        run = 1
        while index + run < len(queues) and queues[index + run] == name and run < MAX_QUEUE_WEIGHT:
            run += 1
        needs_weight = run > 1 or _INTEGER_TEXT.fullmatch(name.rpartition(":")[2]) is not None
        parts.append(f"{name}:{run}" if needs_weight else name)
        index += run
    return ",".join(parts)


def _parse_queue_spec(spec: str, source: str | None) -> tuple[str, ...]:
    name, colon, weight_text = spec.rpartition(":")
    if colon and _INTEGER_TEXT.fullmatch(weight_text):
        return _repeat(name, _parse_weight(weight_text, spec, source), spec, source)
    return _repeat(spec, 1, spec, source)


def _parse_weight(text: object, whole: object, source: str | None) -> int:
    if isinstance(text, str) and _INTEGER_TEXT.fullmatch(text.strip()):
        weight = int(text)
    elif isinstance(text, int) and not isinstance(text, bool):
        weight = text
    else:
        raise ConfigurationError("queues", whole, _WEIGHT_ACCEPTED, source)
    if not 1 <= weight <= MAX_QUEUE_WEIGHT:
        raise ConfigurationError("queues", whole, _WEIGHT_ACCEPTED, source)
    return weight


def _repeat(name: object, weight: int, whole: object, source: str | None) -> tuple[str, ...]:
    if not isinstance(name, str) or not name:
        raise ConfigurationError("queues", whole, "a non-empty queue name", source)
    return (name,) * weight


def _queue_item(item: object, source: str | None) -> tuple[str, ...]:
    if isinstance(item, str):
        return _parse_queue_spec(item.strip(), source)
    if isinstance(item, Mapping):
        return _queue_mapping(item, source)
    if isinstance(item, (list, tuple)) and len(item) == 2:
        return _repeat(item[0], _parse_weight(item[1], item, source), item, source)
    raise ConfigurationError("queues", item, _QUEUES_ACCEPTED, source)


def _queue_mapping(mapping: Mapping[Any, Any], source: str | None) -> tuple[str, ...]:
    return tuple(
        name
        for queue, weight in mapping.items()
        for name in _repeat(queue, _parse_weight(weight, {queue: weight}, source), mapping, source)
    )


def _to_queues(key: str, value: object, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return parse_queues(value, source=source)
    if isinstance(value, Mapping):
        return _queue_mapping(value, source)
    if isinstance(value, (list, tuple)):
        return tuple(name for item in value for name in _queue_item(item, source))
    raise ConfigurationError(key, value, _QUEUES_ACCEPTED, source)


def _to_name_list(key: str, value: object, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value)
    raise ConfigurationError(key, value, "a comma-separated string or a list of names", source)


def _to_int(key: str, value: object, source: str) -> object:
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        return int(value)
    return value  # anything else is left for Settings to accept or reject


def _to_float(key: str, value: object, source: str) -> object:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value  # Settings rejects it with what it accepts
    return value


def _to_bool(key: str, value: object, source: str) -> object:
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS | FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    if isinstance(value, bool):
        return value
    raise ConfigurationError(key, value, "true/false, 1/0, yes/no or on/off", source)


def _to_text(key: str, value: object, source: str) -> object:
    return value.strip() if isinstance(value, str) else value


def _to_plugin_options(key: str, value: object, source: str) -> dict[str, dict[str, Any]]:
    parsed = value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                key, value, f"a JSON object of plugin name to options ({exc})", source
            ) from None
    # Checked here, not only in Settings, because layers merge per plugin before Settings.
    if not isinstance(parsed, Mapping) or not all(isinstance(v, Mapping) for v in parsed.values()):
        raise ConfigurationError(
            key, value, "a mapping of plugin name to a mapping of option name to value", source
        )
    return {plugin: dict(options) for plugin, options in parsed.items()}


def _merge_plugin_options(
    below: Mapping[str, Mapping[str, Any]], above: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    merged = {plugin: dict(options) for plugin, options in below.items()}
    for plugin, options in above.items():
        merged.setdefault(plugin, {}).update(options)
    return merged


Converter = Callable[[str, Any, str], Any]

_CONVERTERS: dict[str, Converter] = {
    "redis_url": _to_text,
    "namespace": _to_text,
    "cluster": _to_bool,
    "concurrency": _to_int,
    "queues": _to_queues,
    "fetch": _to_text,
    "fetch_idle_max_interval": _to_float,
    "push_busy_wait": _to_float,
    "orphan_threshold": _to_float,
    "max_orphanings": _to_int,
    "unique_lock_ttl": _to_float,
    "periodic_catch_up": _to_bool,
    "timeout": _to_float,
    "heartbeat_interval": _to_float,
    "heartbeat_ttl": _to_float,
    "poll_interval": _to_float,
    "orphan_check_interval": _to_float,
    "dead_max_jobs": _to_int,
    "dead_timeout": _to_float,
    "plugins": _to_name_list,
    "log_level": _to_text,
    "log_format": _to_text,
    "logfile": _to_text,
    "environment": _to_text,
    "plugin_options": _to_plugin_options,
}
