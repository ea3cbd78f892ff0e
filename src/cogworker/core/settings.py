"""The one validated, immutable settings object.

``Settings`` holds typed values only and checks every field once, in ``__post_init__``.
Turning loosely typed input (environment strings, YAML, TOML, CLI flags) into these types
happens in one other place, :mod:`cogworker.core.config_layers`; reading files and the
environment happens in :mod:`cogworker.core.config_sources`. ``docs/reference/settings.md``
lists every field with its environment variable, CLI flag and meaning.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from cogworker.core.broker.factory import url_scheme
from cogworker.core.cpu_affinity import ACCEPTED as CPU_AFFINITY_ACCEPTED
from cogworker.core.cpu_affinity import is_valid as _is_cpu_affinity
from cogworker.core.errors import ConfigurationError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")
DEACTIVATE_PREFIX = "no:"
DEFAULT_PLUGINS: tuple[str, ...] = ("redis", "unique", "periodic-locks", "metrics", "cancel",
                                    "limits", "batches", "workflows")
"""The default of ``default_plugins``: the Redis broker, unique jobs, cron locks, metrics,
cancellation, limiters, batches and workflows (the fetch plugin, ``fetch``, comes on top).
Each of the last five costs a job that does not use it no Redis command
(docs/explanation/performance.md)."""
PROVENANCE = "provenance"  # marks the one field that is not a setting
MAX_CONCURRENCY = 1000
DEFAULT_PUSH_BUSY_WAIT = 50e-6  # see cogworker.redis.line_socket
MAX_PUSH_BUSY_WAIT = 0.001

_PLUGIN_NAME = re.compile(r"[a-z0-9_.:-]+")
_PLUGIN_NAME_TEXT = "lowercase letters, digits, '-', '_', '.' and ':'"


def _empty_plugin_options() -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything a cogworker process is configured with; validated when built.

    Times are in seconds. Build one directly (``Settings(concurrency=5)``), derive one with
    :meth:`replace`, or let :func:`cogworker.core.config_sources.load_settings` merge the
    code, file, environment and CLI layers. An invalid value raises
    :class:`~cogworker.core.errors.ConfigurationError` naming the field, the value and what
    is accepted.
    """

    redis_url: str | None = None
    namespace: str = "cogworker"
    cluster: bool = False
    concurrency: int = 10
    queues: tuple[str, ...] = ("default",)
    strict_queue_order: bool = False
    fetch: str = "reliable"
    fetch_idle_max_interval: float = 1.0
    push_busy_wait: float = DEFAULT_PUSH_BUSY_WAIT
    orphan_threshold: float = 45.0
    max_orphanings: int = 3
    unique_lock_ttl: float = 86400.0
    periodic_catch_up: bool = True
    timeout: float = 25.0
    job_time_limit: float = 0.0
    time_limit_grace: float = 10.0
    heartbeat_interval: float = 5.0
    heartbeat_ttl: float = 20.0
    poll_interval: float = 5.0
    orphan_check_interval: float = 15.0
    dead_max_jobs: int = 10000
    dead_timeout: float = 15552000.0
    default_plugins: tuple[str, ...] = DEFAULT_PLUGINS
    plugins: tuple[str, ...] = ()
    log_level: str = "INFO"
    log_format: str = "text"
    logfile: str | None = None
    environment: str | None = None
    cpu_affinity: str = "off"
    plugin_options: Mapping[str, Mapping[str, Any]] = field(default_factory=_empty_plugin_options)
    sources: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}), compare=False, repr=False,
        metadata={PROVENANCE: True})
    """Where each value that is not a default came from (``App() arguments``, a config
    file, ``COGWORKER_CONCURRENCY``, ``--redis-url``...): see :meth:`source_of`."""

    def __post_init__(self) -> None:
        for name, rule in _RULES.items():
            rule.validate(name, getattr(self, name))
        if self.heartbeat_ttl <= self.heartbeat_interval:
            raise ConfigurationError(
                "heartbeat_ttl",
                self.heartbeat_ttl,
                f"a number of seconds greater than heartbeat_interval "
                f"({self.heartbeat_interval!r}), so a live process never looks dead",
            )
        if self.strict_queue_order and len(set(self.queues)) != len(self.queues):
            raise ConfigurationError(
                "queues",
                self.queues,
                "each queue listed once with strict_queue_order (--strict): it always "
                "takes from the first non-empty queue, so a weight would mean nothing",
            )
        for name in _FLOAT_FIELDS:
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "log_level", self.log_level.upper())
        object.__setattr__(self, "log_format", self.log_format.lower())
        object.__setattr__(self, "plugin_options", _read_only_options(self.plugin_options))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Every setting name, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls) if not f.metadata.get(PROVENANCE))

    def source_of(self, name: str) -> str:
        """Where the value of setting ``name`` came from: ``"default"`` when nothing set it,
        else the source as :mod:`cogworker.core.config_sources` names it (``App()
        arguments``, ``/srv/app/pyproject.toml [tool.cogworker]``, ``COGWORKER_REDIS_URL``,
        ``--redis-url``). ``plugins`` accumulate over sources: theirs is the last one."""
        return self.sources.get(name, "default")

    def source_of_plugin(self, name: str) -> str | None:
        """Where the change that names plugin ``name`` (``NAME`` or ``no:NAME``, the last
        one) came from, or None when no change names it (it is a default)."""
        found = None
        for change in self.plugins:
            if change.removeprefix(DEACTIVATE_PREFIX) == name:
                found = self.sources.get(f"plugins[{change}]", found)
        return found

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied, validated like a new object."""
        for key, value in changes.items():
            if key not in _FIELD_NAMES:
                raise unknown_setting_error(key, value, source=None)
        sources = {**self.sources, **dict.fromkeys(changes, "Settings.replace()")}
        return dataclasses.replace(self, **changes, sources=sources)


def unknown_setting_error(
    key: str,
    value: object,
    source: str | None,
    *,
    spelling: Callable[[str], str] = str,
) -> ConfigurationError:
    """The error for a key that names no setting, with the closest valid name suggested.

    ``spelling`` turns a field name into how the source spells it (for example
    ``COGWORKER_CONCURRENCY`` for the environment), so both the suggestion and the list of
    valid names read in the user's terms.
    """
    spelled = [spelling(name) for name in _FIELD_NAMES]
    close = difflib.get_close_matches(key, spelled, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ConfigurationError(
        key,
        value,
        f"a known setting name{hint}; valid names are: {', '.join(spelled)}",
        source,
    )


@dataclass(frozen=True, slots=True)
class _Rule:
    """What one field accepts: a test, and the words that describe it to the user."""

    accepted: str
    test: Callable[[Any], bool]
    per_item: bool = False  # the value is a tuple; test each item and report the bad one
    min_items: int = 0

    def validate(self, name: str, value: object) -> None:
        if not self.per_item:
            if not self.test(value):
                raise ConfigurationError(name, value, self.accepted)
            return
        if not isinstance(value, tuple) or len(value) < self.min_items:
            raise ConfigurationError(name, value, self.accepted)
        for item in value:
            if not self.test(item):
                raise ConfigurationError(name, item, self.accepted)


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _int_at_least(low: int, high: int | None = None) -> _Rule:
    if high is None:
        return _Rule(f"an integer >= {low}", lambda v: _is_int(v) and v >= low)
    return _Rule(f"an integer from {low} to {high}", lambda v: _is_int(v) and low <= v <= high)


def _seconds_above_zero() -> _Rule:
    return _Rule("a finite number of seconds greater than 0", lambda v: _is_number(v) and v > 0)


def _is_plugin_name(value: object) -> bool:
    return isinstance(value, str) and _PLUGIN_NAME.fullmatch(value) is not None


def _is_plugin_change(value: object) -> bool:
    if not isinstance(value, str):
        return False
    name = value.removeprefix(DEACTIVATE_PREFIX)
    return _is_plugin_name(name)


def _is_queue_name(value: object) -> bool:
    return (
        isinstance(value, str)
        and value != ""
        and "," not in value
        and not any(char.isspace() for char in value)
    )


def _is_namespace(value: object) -> bool:
    return (
        isinstance(value, str)
        and value != ""
        and not any(char.isspace() or char in "{}" for char in value)
    )


def _is_optional_text(value: object) -> bool:
    return value is None or (isinstance(value, str) and value != "")


def _is_broker_url(value: object) -> bool:
    """None, or a URL with a scheme (which schemes: the active broker plugins decide)."""
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    try:
        url_scheme(value)
    except ValueError:
        return False
    return _ports_are_numbers(value)


def _ports_are_numbers(url: str) -> bool:
    """Every ``host:port`` of the URL (Sentinel lists several) has a port from 1 to 65535."""
    addresses = urlsplit(url).netloc.rpartition("@")[2]
    for address in addresses.split(","):
        if address.endswith("]"):  # [::1] without a port
            continue
        _host, colon, port = address.rpartition(":")
        if colon and not (port.isdigit() and 0 < int(port) < 65536):
            return False
    return True


def _is_log_level(value: object) -> bool:
    return isinstance(value, str) and value.upper() in LOG_LEVELS


def _is_log_format(value: object) -> bool:
    return isinstance(value, str) and value.lower() in LOG_FORMATS


def _is_plugin_options(value: object) -> bool:
    if not isinstance(value, Mapping):
        return False
    return all(
        isinstance(plugin, str)
        and isinstance(options, Mapping)
        and all(isinstance(option, str) for option in options)
        for plugin, options in value.items()
    )


def _read_only_options(
    options: Mapping[str, Mapping[str, Any]],
) -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType(
        {plugin: MappingProxyType(dict(values)) for plugin, values in options.items()}
    )


_RULES: dict[str, _Rule] = {
    "redis_url": _Rule(
        "a broker URL with a scheme (redis://, rediss://, unix://, redis+sentinel://, "
        "redis+cluster://... for the redis plugin; memory:// with the memory plugin), with a "
        "port from 1 to 65535 if it names one (or leave the setting unset to use the "
        "private redis-server)",
        _is_broker_url
    ),
    "namespace": _Rule("a non-empty string without whitespace or braces ({ })", _is_namespace),
    "cluster": _Rule("true or false", _is_bool),
    "concurrency": _int_at_least(1, MAX_CONCURRENCY),
    "queues": _Rule(
        "at least one queue name; each name non-empty, without whitespace or commas "
        "(repeat a name to weight it)",
        _is_queue_name,
        per_item=True,
        min_items=1,
    ),
    "strict_queue_order": _Rule("true or false", _is_bool),
    "fetch": _Rule(f"a fetch plugin name made of {_PLUGIN_NAME_TEXT}", _is_plugin_name),
    "fetch_idle_max_interval": _seconds_above_zero(),
    "push_busy_wait": _Rule(
        f"a number of seconds from 0 (never busy-wait) to {MAX_PUSH_BUSY_WAIT}",
        lambda v: _is_number(v) and 0 <= v <= MAX_PUSH_BUSY_WAIT,
    ),
    "orphan_threshold": _seconds_above_zero(),
    "max_orphanings": _int_at_least(1),
    "unique_lock_ttl": _seconds_above_zero(),
    "periodic_catch_up": _Rule("true or false", _is_bool),
    "timeout": _Rule("a finite number of seconds >= 0", lambda v: _is_number(v) and v >= 0),
    "job_time_limit": _Rule("a finite number of seconds >= 0 (0: no limit)",
                            lambda v: _is_number(v) and v >= 0),
    "time_limit_grace": _seconds_above_zero(),
    "heartbeat_interval": _seconds_above_zero(),
    "heartbeat_ttl": _seconds_above_zero(),
    "poll_interval": _seconds_above_zero(),
    "orphan_check_interval": _seconds_above_zero(),
    "dead_max_jobs": _int_at_least(1),
    "dead_timeout": _seconds_above_zero(),
    "default_plugins": _Rule(
        f"plugin names, each made of {_PLUGIN_NAME_TEXT} (the set ``plugins`` changes)",
        _is_plugin_name,
        per_item=True,
    ),
    "plugins": _Rule(
        f"plugin changes, each NAME to activate or no:NAME to deactivate, NAME made of "
        f"{_PLUGIN_NAME_TEXT}",
        _is_plugin_change,
        per_item=True,
    ),
    "log_level": _Rule(f"one of {', '.join(LOG_LEVELS)} (any case)", _is_log_level),
    "log_format": _Rule(" or ".join(LOG_FORMATS), _is_log_format),
    "logfile": _Rule("a non-empty file path (or leave it unset to log to stdout)",
                     _is_optional_text),
    "environment": _Rule("a non-empty name such as production (or leave it unset)",
                         _is_optional_text),
    "cpu_affinity": _Rule(CPU_AFFINITY_ACCEPTED, _is_cpu_affinity),
    "plugin_options": _Rule(
        "a mapping of plugin name to a mapping of option name to value", _is_plugin_options
    ),
}

_FIELD_NAMES = Settings.field_names()
_FLOAT_FIELDS = tuple(f.name for f in dataclasses.fields(Settings) if isinstance(f.default, float))


def checked_like(setting: str, value: object, field: str, source: str | None = None) -> Any:
    """``value`` checked by the rule of setting ``setting`` (a float field's value as a
    float), reported as ``field``: a plugin option that a top-level setting aliases accepts
    exactly what that setting does. Raises :class:`ConfigurationError` naming ``field``."""
    try:
        _RULES[setting].validate(field, value)
    except ConfigurationError as exc:
        raise ConfigurationError(field, exc.value, exc.accepted, source) from None
    return float(value) if setting in _FLOAT_FIELDS else value  # type: ignore[arg-type]
