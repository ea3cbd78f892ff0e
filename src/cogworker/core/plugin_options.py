"""A plugin's options: ``plugin_options.<plugin>.<option>``, or the top-level alias.

Every plugin's options live under ``plugin_options.<plugin name>`` in every settings source
(code, file, environment). The built-ins' options also keep their older top-level names
(``fetch_idle_max_interval`` is ``plugin_options.reliable.idle_max_interval``): such an
alias is a :class:`~cogworker.core.settings.Settings` field, validated with the settings,
and it applies when the plugin option is not set. The plugin option, when set, wins, and is
checked by the same rule, its error naming it in full
(``plugin_options.reliable.idle_max_interval``). A name the plugin does not declare is an
error that names the closest declared one.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from cogworker.core.errors import ConfigurationError
from cogworker.core.settings import Settings, checked_like
from cogworker.core.value_record import ValueRecord


class AliasedOption(ValueRecord):
    """Option ``name`` of a plugin, also set by the top-level setting ``alias`` (whose
    rule checks it, and whose value is its default). A ValueRecord: plugins declare these
    at import, on the first push's path."""

    _fields = ("name", "alias")
    __slots__ = _fields
    name: str
    alias: str

    def __init__(self, name: str, alias: str) -> None:
        super().__init__(name, alias)


def read_plugin_options(settings: Settings, plugin: str,
                        declared: Sequence[AliasedOption]) -> dict[str, Any]:
    """Plugin ``plugin``'s options by name: each from ``plugin_options.<plugin>`` when set
    there, else from its alias. Raises :class:`ConfigurationError` naming the field in
    full for a bad value or an undeclared name."""
    given: Mapping[str, Any] = settings.plugin_options.get(plugin, {})
    source = settings.sources.get("plugin_options")
    names = [option.name for option in declared]
    for key, value in given.items():
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigurationError(
                f"plugin_options.{plugin}.{key}", value,
                f"an option of plugin {plugin!r}{hint}; its options are: {', '.join(names)}",
                source)
    return {
        option.name: (checked_like(option.alias, given[option.name],
                                   f"plugin_options.{plugin}.{option.name}", source)
                      if option.name in given else getattr(settings, option.alias))
        for option in declared
    }
