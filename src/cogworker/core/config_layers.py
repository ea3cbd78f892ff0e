"""Turn loosely typed setting values into typed ones, and merge layers into ``Settings``.

This is the only place that converts: environment strings, YAML and TOML values, CLI
arguments and ``App(...)`` keywords all pass through :func:`settings_from_layers`. String
forms accepted (see ``docs/reference/settings.md``):

- integers and floats from their decimal text; booleans from true/false, 1/0, yes/no,
  on/off (any case);
- queues from ``"critical,3,default"`` or ``"critical:3,default"`` (a weight expands to
  that many copies of the name before it; one grammar for ``-q``, the environment and
  files), from a list of such strings, ``[name, weight]`` pairs or ``{name: weight}``
  mappings, or from one such mapping;
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
_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
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
    # Each plugin change keeps its own source: "no plugin 'uniqe'" names the file it is in.
    origins.update({plugin_change_key(change): src for change, src in plugin_origins})
    try:
        return Settings(**merged, sources=origins)
    except ConfigurationError as exc:
        origin = origins.get(exc.field)
        if exc.field == "plugins":
            origin = next((src for change, src in plugin_origins if change == exc.value), origin)
        # Show the value as the user wrote it ("-3"), not as converted (-3.0).
        as_converted = exc.field in merged and exc.value is merged[exc.field]
        shown = raw_values[exc.field] if as_converted else exc.value
        raise ConfigurationError(exc.field, shown, exc.accepted, origin) from None


def plugin_change_key(change: str) -> str:
    """The key under which ``Settings.sources`` records where a plugin change came from."""
    return f"plugins[{change}]"


def parse_queue_options(options: Iterable[str], *, source: str = "--queue") -> tuple[str, ...]:
    """Parse repeated CLI ``-q`` values (each as :func:`parse_queues`), in the order given."""
    names: list[str] = []
    for option in options:
        parsed = parse_queues(option, source=source)
        if not parsed:
            raise ConfigurationError("queues", option, "a non-empty queue name", source)
        names.extend(parsed)
    return tuple(names)


def parse_queues(text: str, *, source: str | None = None) -> tuple[str, ...]:
    """Parse queues text into names repeated by weight, in order. One grammar everywhere
    (``-q``, ``COGWORKER_QUEUES``, config files): comma-separated items, each

    * ``NAME`` — weight 1;
    * ``NAME:WEIGHT`` — ``WEIGHT`` copies (``critical:3``);
    * a bare ``WEIGHT`` — the weight of the name just before it (``critical,3`` is
      ``critical:3``, as Sidekiq's ``-q critical,3``).

    A ``:N`` suffix is a weight only when ``N`` is an integer, so ``app:high`` keeps its
    colon; write ``app:7:1`` for a queue whose name itself ends in ``:7``. A name that is
    only digits cannot be written in text (it reads as a weight): use a ``[name, weight]``
    pair in a config file.
    """
    items: list[object] = [spec.strip() for spec in text.split(",")]
    return _weighted_items([item for item in items if item], text, source)


def _weighted_items(items: Sequence[object], whole: object,
                    source: str | None) -> tuple[str, ...]:
    """Names repeated by weight from a list of items; an integer item (or integer text)
    weights the unweighted name before it."""
    names: list[str] = []
    pending: object = None  # the previous item, while it still may take a weight
    for item in items:
        if _is_weight(item):
            if pending is None:
                raise ConfigurationError(
                    "queues", whole, f"a queue name before each weight ({item!r} follows "
                    "no name, or a name that has a weight already): NAME,WEIGHT or "
                    "NAME:WEIGHT", source)
            names.extend(_repeat(pending, _parse_weight(item, whole, source), whole, source))
            pending = None
            continue
        if pending is not None:
            names.extend(_repeat(pending, 1, whole, source))
            pending = None
        if isinstance(item, str) and _parse_queue_spec(item, source) == (item,):
            pending = item  # a plain name: the next item may be its weight
        else:
            names.extend(_queue_item(item, source))
    if pending is not None:
        names.extend(_repeat(pending, 1, whole, source))
    return tuple(names)


def _is_weight(item: object) -> bool:
    """An integer, or text that reads as a number (``1.5`` is a bad weight, not a name)."""
    if isinstance(item, bool):
        return False
    if isinstance(item, (int, float)):
        return True
    return isinstance(item, str) and bool(_NUMBER_TEXT.fullmatch(item))


def format_queues(queues: Sequence[str]) -> str:
    """The inverse of :func:`parse_queues`: runs of one name become ``name:count``."""
    parts: list[str] = []
    index = 0
    while index < len(queues):
        name = queues[index]
        run = 1
        while index + run < len(queues) and queues[index + run] == name and run < MAX_QUEUE_WEIGHT:
            run += 1
        needs_weight = (run > 1 or _INTEGER_TEXT.fullmatch(name.rpartition(":")[2]) is not None
                        or _NUMBER_TEXT.fullmatch(name) is not None)
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
        items: list[object] = []
        for item in value:  # "critical,3" inside a list means what it means as text
            if isinstance(item, str):
                items.extend(part.strip() for part in item.split(",") if part.strip())
            else:
                items.append(item)
        return _weighted_items(items, value, source)
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


def _to_cpu_list(key: str, value: object, source: str) -> object:
    """A file's ``cpu_affinity = 3`` (a number, not text) names one CPU."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _to_text(key, value, source)


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
    "strict_queue_order": _to_bool,
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
    "job_time_limit": _to_float,
    "time_limit_grace": _to_float,
    "heartbeat_interval": _to_float,
    "heartbeat_ttl": _to_float,
    "poll_interval": _to_float,
    "orphan_check_interval": _to_float,
    "dead_max_jobs": _to_int,
    "dead_timeout": _to_float,
    "default_plugins": _to_name_list,
    "plugins": _to_name_list,
    "log_level": _to_text,
    "log_format": _to_text,
    "logfile": _to_text,
    "environment": _to_text,
    "cpu_affinity": _to_cpu_list,
    "plugin_options": _to_plugin_options,
}
