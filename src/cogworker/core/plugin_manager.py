"""The plugin manager cogworker registers its plugins in: pluggy's, quicker at reading a
module.

Registering a plugin module (and adding the hookspecs) makes pluggy look up every name of
the module with ``inspect.getattr_static``; most are imports and constants, and those
look-ups were half of what a first push spent registering the default plugins. Here a name
whose value in the module's ``__dict__`` is a function without the marker, or no function
at all, is skipped at once (pluggy reads markers from functions and method wrappers only);
any other name, and any plugin that is not a module, goes to pluggy's own look-up.
"""

from __future__ import annotations

import types

import pluggy

from cogworker.core.markers import PROJECT_NAME

_ABSENT = object()
_METHOD_WRAPPERS = (staticmethod, classmethod, types.MethodType)


class PluginManager(pluggy.PluginManager):
    """``pluggy.PluginManager`` for the ``cogworker`` project (see the module doc)."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        if _plainly_unmarked(plugin, name, f"{PROJECT_NAME}_impl"):
            return None
        return super().parse_hookimpl_opts(plugin, name)

    def parse_hookspec_opts(self, module_or_class: types.ModuleType | type,
                            name: str) -> pluggy.HookspecOpts | None:
        if _plainly_unmarked(module_or_class, name, f"{PROJECT_NAME}_spec"):
            return None
        return super().parse_hookspec_opts(module_or_class, name)


def _plainly_unmarked(namespace: object, name: str, marker: str) -> bool:
    """True when ``namespace`` is a module whose ``name`` cannot be a hook (pluggy reads
    markers from functions and method wrappers only)."""
    if not isinstance(namespace, types.ModuleType):
        return False
    value = vars(namespace).get(name, _ABSENT)
    if isinstance(value, types.FunctionType):
        return marker not in vars(value)
    return value is not _ABSENT and not isinstance(value, _METHOD_WRAPPERS)
