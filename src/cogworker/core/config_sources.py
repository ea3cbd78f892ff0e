"""Where settings come from: config files, the environment, and the layered merge.

Precedence, lowest first: defaults < ``App(...)`` keywords < config file < ``COGWORKER_*``
environment < CLI flags. The config file is the explicit ``--config`` path, else the one
``COGWORKER_CONFIG`` names, else ``cogworker.toml`` in the working directory, else
``pyproject.toml`` there if it has a ``[tool.cogworker]`` table. YAML files are the original
gem's format: keys may be spelled ``:concurrency:`` and ``${VAR}`` / ``${VAR:-default}``
expand from the environment before parsing.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cogworker.core.config_layers import Layer, settings_from_layers
from cogworker.core.errors import ConfigurationError
from cogworker.core.settings import Settings, unknown_setting_error

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ENV_PREFIX = "COGWORKER_"
CONFIG_ENV_VAR = "COGWORKER_CONFIG"
REDIS_URL_FALLBACK_ENV_VAR = "REDIS_URL"
# COGWORKER_* variables read elsewhere in cogworker; they are not settings.
NON_SETTING_ENV_VARS = frozenset(
    {
        CONFIG_ENV_VAR,
        "COGWORKER_REDIS_SERVER",
        "COGWORKER_TRACE_PLUGINS",
        "COGWORKER_COUNT",
        "COGWORKER_RELOAD",
        "COGWORKER_SESSION_SECRET",
        "COGWORKER_CACHE_DIR",  # the plugin scan's cache (core/plugin_cache.py)
    }
)
NON_SETTING_ENV_PREFIXES = ("COGWORKER_TEST_", "COGWORKER_EXAMPLE_")
# The CLI flag of each setting that has one; it names the source of a bad CLI value.
CLI_FLAGS: Mapping[str, str] = MappingProxyType(
    {
        "concurrency": "--concurrency",
        "queues": "--queue",
        "timeout": "--timeout",
        "redis_url": "--redis-url",
        "plugins": "--plugin",
        "log_level": "--log-level",
        "log_format": "--log-format",
        "logfile": "--logfile",
        "environment": "--environment",
    }
)
CODE_SOURCE = "App() arguments"
CLI_SOURCE = "command line"
ENV_SOURCE = "environment"
CONFIG_FIELD = "config"
YAML_SUFFIXES = (".yml", ".yaml")

_NOTHING: Mapping[str, Any] = MappingProxyType({})
_ENV_REFERENCE = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_FILE_ACCEPTED = "the path of an existing .toml, .yml or .yaml file"


def load_settings(
    *,
    code: Mapping[str, Any] = _NOTHING,
    config_path: Path | None = None,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    cli: Mapping[str, Any] = _NOTHING,
) -> Settings:
    """Build the process's settings from every layer, in precedence order.

    ``code`` and ``cli`` are keyed by setting name; a ``None`` value there means "not
    given", so callers may pass every keyword argument or click option as is. A relative
    ``config_path`` is taken relative to ``cwd`` (default: the working directory).
    """
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    layers = [Layer(CODE_SOURCE, _given(code))]
    path = _config_file(config_path, cwd, environ)
    if path is not None:
        layers.append(load_file(path, environ=environ))
    layers.append(env_layer(environ))
    cli_values = _given(cli)
    cli_sources = {key: CLI_FLAGS[key] for key in cli_values if key in CLI_FLAGS}
    layers.append(Layer(CLI_SOURCE, cli_values, cli_sources))
    return settings_from_layers(layers)


def load_file(path: Path, *, environ: Mapping[str, str] | None = None) -> Layer:
    """Read one config file: TOML (``cogworker.toml`` or ``pyproject.toml``) or YAML.

    ``environ`` (default ``os.environ``) feeds ``${VAR}`` expansion in YAML files.
    """
    suffix = path.suffix.lower()
    if suffix != ".toml" and suffix not in YAML_SUFFIXES:
        raise ConfigurationError(CONFIG_FIELD, str(path), _FILE_ACCEPTED)
    text = _read_text(path)
    if suffix == ".toml":
        return _toml_layer(path, text)
    return _yaml_layer(path, text, os.environ if environ is None else environ)


def discover_file(cwd: Path) -> Path | None:
    """``cogworker.toml`` in ``cwd``, else a ``pyproject.toml`` with ``[tool.cogworker]``."""
    candidate = cwd / "cogworker.toml"
    if candidate.is_file():
        return candidate
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file():
        document = _parse_toml(pyproject, _read_text(pyproject))
        if _tool_table(document) is not None:
            return pyproject
    return None


def env_layer(environ: Mapping[str, str]) -> Layer:
    """Every ``COGWORKER_<SETTING>`` variable as a layer; empty variables count as unset.

    ``REDIS_URL`` stands in for ``COGWORKER_REDIS_URL`` when that one is not set. A
    ``COGWORKER_*`` variable that is neither a setting nor in ``NON_SETTING_ENV_VARS`` is an
    error, so a misspelt variable never goes unnoticed.
    """
    field_names = Settings.field_names()
    values: dict[str, str] = {}
    key_sources: dict[str, str] = {}
    for variable, raw in environ.items():
        if not variable.startswith(ENV_PREFIX) or _is_non_setting(variable) or raw == "":
            continue
        key = variable.removeprefix(ENV_PREFIX).lower()
        if key not in field_names:
            raise unknown_setting_error(variable, raw, variable, spelling=env_var_name)
        values[key] = raw
        key_sources[key] = variable
    fallback = environ.get(REDIS_URL_FALLBACK_ENV_VAR, "")
    if "redis_url" not in values and fallback:
        values["redis_url"] = fallback
        key_sources["redis_url"] = REDIS_URL_FALLBACK_ENV_VAR
    return Layer(ENV_SOURCE, values, key_sources)


def describe_source(source: str) -> str:
    """A source as :func:`load_settings` records it, in words for an error message."""
    if source == CODE_SOURCE:
        return "the App(...) arguments in the app's code"
    if source in CLI_FLAGS.values():
        return f"the command-line flag {source}"
    if source.startswith(ENV_PREFIX) or source == REDIS_URL_FALLBACK_ENV_VAR:
        return f"the environment variable {source}"
    if source == "default":
        return "the default"
    if source in (CLI_SOURCE, ENV_SOURCE):
        return f"the {source}"
    return source if source.endswith("()") else f"the config file {source}"


def env_var_name(field_name: str) -> str:
    """The environment variable for a setting: ``concurrency`` → ``COGWORKER_CONCURRENCY``."""
    return ENV_PREFIX + field_name.upper()


def expand_environment(text: str, environ: Mapping[str, str], *, source: str) -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in ``text``; ``$${`` is a literal ``${``.

    The default applies when the variable is unset or empty, as in the shell.
    """

    def substitute(match: re.Match[str]) -> str:
        escaped, name, default = match.groups()
        if escaped:
            return match.group(0)[1:]
        value = environ.get(name, "")
        if value:
            return value
        if default is not None:
            return default
        raise ConfigurationError(
            CONFIG_FIELD,
            match.group(0),
            f"an environment variable {name} that is set, or a default written as "
            f"${{{name}:-default}}",
            source,
        )

    return _ENV_REFERENCE.sub(substitute, text)


def _config_file(explicit: Path | None, cwd: Path, environ: Mapping[str, str]) -> Path | None:
    if explicit is None and environ.get(CONFIG_ENV_VAR):
        explicit = Path(environ[CONFIG_ENV_VAR])
    if explicit is None:
        return discover_file(cwd)
    return explicit if explicit.is_absolute() else cwd / explicit


def _given(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _is_non_setting(variable: str) -> bool:
    return variable in NON_SETTING_ENV_VARS or variable.startswith(NON_SETTING_ENV_PREFIXES)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(CONFIG_FIELD, str(path), _FILE_ACCEPTED) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            CONFIG_FIELD, str(path), f"a readable UTF-8 file ({exc})"
        ) from None


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(
            CONFIG_FIELD, str(path), f"valid TOML (the parser said: {exc})"
        ) from None


def _tool_table(document: Mapping[str, Any]) -> Any:
    tool = document.get("tool")
    return tool.get("cogworker") if isinstance(tool, dict) else None


def _toml_layer(path: Path, text: str) -> Layer:
    document = _parse_toml(path, text)
    if path.name != "pyproject.toml":
        return Layer(str(path), document)
    table = _tool_table(document)
    if not isinstance(table, dict):
        raise ConfigurationError(
            CONFIG_FIELD, str(path), "a pyproject.toml with a [tool.cogworker] table"
        )
    return Layer(f"{path} [tool.cogworker]", table)


def _yaml_layer(path: Path, text: str, environ: Mapping[str, str]) -> Layer:
    import yaml  # only here: a process without a YAML config never pays its import

    source = str(path)
    expanded = expand_environment(text, environ, source=source)
    try:
        document = yaml.safe_load(expanded)
    except yaml.YAMLError as exc:
        raise ConfigurationError(
            CONFIG_FIELD, source, f"valid YAML (the parser said: {exc})"
        ) from None
    if document is None:
        return Layer(source, {})
    if not isinstance(document, dict):
        raise ConfigurationError(CONFIG_FIELD, source, "a YAML mapping of setting names to values")
    # The original gem writes Ruby symbol keys, ":concurrency: 5", read as ":concurrency".
    values = {_strip_colon(key): value for key, value in document.items()}
    return Layer(source, values)


def _strip_colon(key: object) -> str:
    text = key if isinstance(key, str) else str(key)
    return text.removeprefix(":")
