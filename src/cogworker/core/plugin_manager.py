"""The plugin manager cogworker registers its plugins in: pluggy's, quicker at reading a
module.

Registering a plugin module (and adding the hookspecs) makes pluggy look up every name of
the module with ``inspect.getattr_static``; most are imports and constants, and those
look-ups were half of what a first push spent registering the default plugins. Here a
module's name is answered from the module's ``__dict__`` when that settles it the way
pluggy's look-up would:

* a value that is no function and no method wrapper, or a function without the marker, is
  no hook (pluggy reads markers from functions and method wrappers only);
* a plain function carrying the marker is a hook with the options the marker holds (what
  pluggy returns for a function found in a module: its marker attribute, if a dict).

Any other name (a method wrapper, a name the module type itself defines) and any plugin
that is not a module go to pluggy's own look-up.
"""

from __future__ import annotations

import types
from typing import cast

import pluggy

from cogworker.core.markers import PROJECT_NAME

_ABSENT = object()
_UNSETTLED = object()
# names the module type defines (``__dict__``, ``__class__`` ...): pluggy's look-up decides
_MODULE_TYPE_NAMES = frozenset(dir(types.ModuleType))
_METHOD_WRAPPERS = (staticmethod, classmethod, types.MethodType)


class PluginManager(pluggy.PluginManager):
    """``pluggy.PluginManager`` for the ``cogworker`` project (see the module doc)."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        found = _marker_in_module(plugin, name, f"{PROJECT_NAME}_impl")
        if found is not _UNSETTLED:
            return cast("pluggy.HookimplOpts | None", found)
        return super().parse_hookimpl_opts(plugin, name)

    def parse_hookspec_opts(self, module_or_class: types.ModuleType | type,
                            name: str) -> pluggy.HookspecOpts | None:
        found = _marker_in_module(module_or_class, name, f"{PROJECT_NAME}_spec")
        if found is not _UNSETTLED:
            return cast("pluggy.HookspecOpts | None", found)
        return super().parse_hookspec_opts(module_or_class, name)


def _marker_in_module(namespace: object, name: str, marker: str) -> object:
    """The options ``marker`` gives ``name`` of the module ``namespace`` (None: no hook),
    or ``_UNSETTLED`` when only pluggy's own look-up can tell (see the module doc)."""
    if type(namespace) is not types.ModuleType:
        return _UNSETTLED
    value = vars(namespace).get(name, _ABSENT)
    if value is _ABSENT or isinstance(value, _METHOD_WRAPPERS):
        return _UNSETTLED
    if not isinstance(value, types.FunctionType):
        return None
    options = vars(value).get(marker)
    if options is None:
        return None
    if name in _MODULE_TYPE_NAMES:  # a function under a name the module type defines
        return _UNSETTLED
    return options if isinstance(options, dict) else None
