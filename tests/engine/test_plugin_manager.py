"""cogworker's plugin manager finds exactly the hooks pluggy's own look-up finds.

:class:`cogworker.core.plugin_manager.PluginManager` skips a module's plainly unmarked
names before pluggy's per-name static look-up (a first push's registration cost); these
tests hold it to pluggy's answer on every built-in plugin and on the hookspecs, and check
that what it cannot judge (method wrappers, non-module plugins) still goes to pluggy.
"""

from __future__ import annotations

import importlib
import types

import pluggy
import pytest

from cogworker.core import hookspecs
from cogworker.core.markers import PROJECT_NAME, hookimpl
from cogworker.core.plugin_manager import PluginManager

BUILTIN_MODULES = (
    "cogworker.fetchers.basic", "cogworker.fetchers.reliable", "cogworker.redis.plugin",
    "cogworker.plugins.unique", "cogworker.plugins.periodic_locks",
    "cogworker.testing.memory_broker.plugin", "cogworker.plugins.status",
    "cogworker.plugins.attempts", "cogworker.plugins.history", "cogworker.plugins.otel",
    "cogworker.plugins.metrics", "cogworker.plugins.cancel", "cogworker.plugins.limits",
    "cogworker.plugins.batches", "cogworker.plugins.workflows",
)


def impl_options(manager: pluggy.PluginManager, plugin: object) -> dict[str, object]:
    found = {name: manager.parse_hookimpl_opts(plugin, name) for name in dir(plugin)}
    return {name: opts for name, opts in found.items() if opts is not None}


@pytest.mark.parametrize("module_name", BUILTIN_MODULES)
def test_every_builtin_plugin_has_the_hooks_pluggy_finds(module_name: str) -> None:
    module = importlib.import_module(module_name)
    ours = impl_options(PluginManager(), module)

    assert ours == impl_options(pluggy.PluginManager(PROJECT_NAME), module)
    assert ours  # each built-in implements at least one hook


def test_the_hookspecs_are_the_ones_pluggy_finds() -> None:
    theirs = pluggy.PluginManager(PROJECT_NAME)
    ours = PluginManager()
    names = dir(hookspecs)

    found = {n: ours.parse_hookspec_opts(hookspecs, n) for n in names}
    assert found == {n: theirs.parse_hookspec_opts(hookspecs, n) for n in names}
    assert {n for n, opts in found.items() if opts is not None} == set(hookspecs.ALL_HOOKS)


def test_wrapped_and_class_hooks_still_reach_pluggy() -> None:
    def heartbeat(worker: object) -> None:
        del worker

    def unmarked(worker: object) -> None:
        del worker

    module = types.ModuleType("wrapped_plugin")
    module.cogworker_heartbeat = staticmethod(hookimpl(heartbeat))  # type: ignore[attr-defined]
    module.cogworker_shutdown = unmarked  # type: ignore[attr-defined]  # a hook's name only
    module.LIMIT = 3  # type: ignore[attr-defined]

    class ClassPlugin:
        @hookimpl
        def cogworker_startup(self, worker: object) -> None:
            del worker

    for plugin in (module, ClassPlugin(), ClassPlugin):
        assert impl_options(PluginManager(), plugin) == impl_options(
            pluggy.PluginManager(PROJECT_NAME), plugin)
    assert set(impl_options(PluginManager(), module)) == {"cogworker_heartbeat"}
    assert set(impl_options(PluginManager(), ClassPlugin())) == {"cogworker_startup"}
