"""The plugin catalog and its activation: discover all, activate explicitly.

Step by step (``docs/reference/plugin-discovery.md`` tells the same story for users):

1. :func:`discover` lists every entry point of the ``cogworker`` group, imports nothing,
   and fails when a name is claimed by two distributions or a builtin is missing.
2. :func:`resolve_active` starts from the fetch plugin plus the ``default_plugins``
   setting (declared data, default :data:`~cogworker.core.settings.DEFAULT_PLUGINS`) and
   applies ``NAME`` / ``no:NAME`` / ``module.path:`` changes in order. An explicitly
   activated plugin that implements ``cogworker_make_fetcher`` takes the fetch slot.
3. :func:`load_plugins` imports the active plugins in sorted order, registers them, checks
   that at most one exclusive fetcher is active and runs ``check_pending``.
4. :func:`describe` lists every plugin, active or not, for ``cogworker plugins``.

Installing a package never changes a worker by itself: only named plugins are imported.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import cast

import pluggy

from cogworker.core import hookspecs, plugin_cache
from cogworker.core.config_sources import describe_source
from cogworker.core.errors import (
    PluginConflictError,
    PluginError,
    PluginLoadError,
    PluginNotFoundError,
)
from cogworker.core.hook_dispatch import arm_addhooks, tracing_requested
from cogworker.core.plugin_manager import PluginManager
from cogworker.core.settings import DEACTIVATE_PREFIX, DEFAULT_PLUGINS, Settings
from cogworker.core.value_record import ValueRecord

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "cogworker"
BUILTIN_PLUGINS: tuple[str, ...] = ("basic", "reliable", "redis", "unique", "periodic-locks",
                                  "memory", "status", "attempts", "history", "otel",
                                  "metrics", "cancel", "limits", "batches", "workflows")
"""The entry points cogworker's own metadata declares: only to tell a broken install."""
LOCAL_SUFFIX = ":"
LOCAL_DISTRIBUTION = "(local module)"
FETCHER_HOOK = "cogworker_make_fetcher"


class CatalogEntry(ValueRecord):
    """One plugin name and where it comes from; nothing is imported to build it.

    ``target`` is the entry point's value (``package.module`` or ``package.module:attr``)
    or, for a ``module.path:`` plugin, the dotted module path. ``folder`` is the
    distribution's metadata folder (None for a ``module.path:`` plugin). A ValueRecord:
    this module is imported at every first push.
    """

    _fields = ("name", "target", "distribution", "version", "folder", "group")
    __slots__ = _fields
    name: str
    target: str
    distribution: str
    version: str
    folder: str | None
    group: str

    def __init__(self, name: str, target: str, distribution: str, version: str,
                 folder: str | None = None, group: str = ENTRY_POINT_GROUP) -> None:
        super().__init__(name, target, distribution, version, folder, group)

    @property
    def entry_point(self) -> importlib.metadata.EntryPoint | None:
        """The installed entry point, with its distribution (read from the disk on each
        call: discovery may have come from the cache); None for a ``module.path:`` one."""
        if self.distribution == LOCAL_DISTRIBUTION:
            return None
        if self.folder is not None:
            dist = importlib.metadata.Distribution.at(self.folder)
            for entry_point in dist.entry_points.select(group=self.group, name=self.name):
                return entry_point
        return importlib.metadata.EntryPoint(self.name, self.target, self.group)

    def load(self) -> object:
        """Import the plugin object; any failure becomes a :class:`PluginLoadError`."""
        try:
            if self.distribution == LOCAL_DISTRIBUTION:
                return importlib.import_module(self.target)
            # what EntryPoint.load does, without reading the distribution again
            return importlib.metadata.EntryPoint(self.name, self.target, self.group).load()
        except Exception as exc:
            raise PluginLoadError(self.name, self.distribution, exc) from exc


class Catalog(Mapping[str, CatalogEntry]):
    """Every installed cogworker plugin by name (read-only)."""

    def __init__(self, entries: Iterable[CatalogEntry]) -> None:
        self._entries = {entry.name: entry for entry in entries}

    def __getitem__(self, name: str) -> CatalogEntry:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, name: str) -> CatalogEntry:
        """The entry for an installed name or a ``module.path:`` plugin.

        Raises :class:`PluginNotFoundError` with the closest installed name.
        """
        if is_local_plugin(name):
            module = name.removesuffix(LOCAL_SUFFIX)
            return CatalogEntry(name, module, LOCAL_DISTRIBUTION, "-")
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self), n=1)
            raise PluginNotFoundError(name, self, close[0] if close else None) from None


class PluginInfo(ValueRecord):
    """One line of ``cogworker plugins``: ``hooks`` is empty for inactive plugins."""

    _fields = ("name", "distribution", "version", "active", "hooks")
    __slots__ = _fields
    name: str
    distribution: str
    version: str
    active: bool
    hooks: tuple[str, ...]

    def __init__(self, name: str, distribution: str, version: str, active: bool,
                 hooks: tuple[str, ...]) -> None:
        super().__init__(name, distribution, version, active, hooks)


def is_local_plugin(name: str) -> bool:
    """True for ``module.path:``, a module registered directly (a development aid)."""
    module = name.removesuffix(LOCAL_SUFFIX)
    return (
        name.endswith(LOCAL_SUFFIX)
        and module != ""
        and all(part.isidentifier() for part in module.split("."))
    )


# -- 1. discovery ----------------------------------------------------------------------


def discover() -> Catalog:
    """Scan the ``cogworker`` entry-point group without importing any plugin.

    The scan's result is cached while the installed distributions are unchanged
    (:mod:`cogworker.core.plugin_cache`). Raises :class:`PluginConflictError` when two
    distributions claim one name, and :class:`PluginError` when one of cogworker's own
    builtins is missing.
    """
    found: dict[str, CatalogEntry] = {}
    for record in plugin_cache.cached_scan(ENTRY_POINT_GROUP):
        entry = CatalogEntry(record.name, record.value, record.distribution, record.version,
                             record.folder)
        previous = found.get(entry.name)
        if previous is not None and previous.distribution != entry.distribution:
            raise PluginConflictError(
                f"cogworker plugin name {entry.name!r} is provided by two distributions, "
                f"{previous.distribution!r} and {entry.distribution!r}; a plugin name must "
                f"be unique. Uninstall one of them (pip uninstall {entry.distribution})."
            )
        found.setdefault(entry.name, entry)
    missing = [name for name in BUILTIN_PLUGINS if name not in found]
    if missing:
        raise PluginError(
            f"cogworker's own plugin entry points are missing ({', '.join(missing)}): its "
            "package metadata is not installed (an uninstalled source checkout, or a bundler "
            "that dropped entry_points.txt). Reinstall cogworker, e.g. pip install -e ."
        )
    return Catalog(found.values())


# -- 2. activation ---------------------------------------------------------------------


def resolve_active(catalog: Catalog, fetch: str, changes: Sequence[str],
                   settings: Settings | None = None) -> list[str]:
    """The names to activate: ``[fetch, *settings.default_plugins]`` (without ``settings``:
    :data:`~cogworker.core.settings.DEFAULT_PLUGINS`) with ``changes`` applied.

    ``"NAME"`` activates, ``"no:NAME"`` deactivates, ``"module.path:"`` activates a module
    directly; later changes win. An explicitly activated plugin implementing
    ``cogworker_make_fetcher`` replaces ``fetch`` (so ``--plugin basic`` switches from the
    default fetcher to basic); to tell, those plugins (only those) are imported.

    Raises :class:`PluginNotFoundError` for an unknown name, :class:`PluginConflictError`
    when two explicitly activated plugins both provide a fetcher, :class:`PluginLoadError`
    when an explicitly activated plugin fails to import. With ``settings`` (whose
    ``fetch`` and ``plugins`` these are), an unknown name's error says where it was set.
    """
    defaults = DEFAULT_PLUGINS if settings is None else settings.default_plugins
    try:
        return _resolve(catalog, fetch, defaults, changes)
    except PluginNotFoundError as exc:
        if settings is None:
            raise
        source = (settings.source_of_plugin(exc.name) or
                  (settings.source_of("fetch") if exc.name == fetch else None) or
                  (settings.sources.get("default_plugins")
                   if exc.name in settings.default_plugins else None))
        described = describe_source(source) if source is not None else None
        raise PluginNotFoundError(exc.name, exc.installed, exc.suggestion, described) from None


def _resolve(catalog: Catalog, fetch: str, defaults: Sequence[str],
             changes: Sequence[str]) -> list[str]:
    catalog.entry(fetch)
    for name in defaults:
        catalog.entry(name)
    active = [fetch, *(name for name in dict.fromkeys(defaults) if name != fetch)]
    explicit: list[str] = []
    for change in changes:
        blocked = change.startswith(DEACTIVATE_PREFIX)
        name = change.removeprefix(DEACTIVATE_PREFIX)
        catalog.entry(name)
        if blocked:
            active = [n for n in active if n != name]
            explicit = [n for n in explicit if n != name]
            continue
        if name not in active:
            active.append(name)
        if name not in explicit:
            explicit.append(name)
    fetchers = [name for name in explicit if _provides_fetcher(catalog.entry(name))]
    if len(fetchers) > 1:
        raise _fetcher_conflict(catalog, fetchers[0], fetchers[1], "were both activated")
    if fetchers and fetchers[0] != fetch:
        active = [n for n in active if n != fetch]
    return active


def _provides_fetcher(entry: CatalogEntry) -> bool:
    plugin = entry.load()
    parser = PluginManager()
    for attribute in dir(plugin):
        opts = parser.parse_hookimpl_opts(plugin, attribute)
        if opts is None or opts["wrapper"] or opts["hookwrapper"]:
            continue
        if (opts["specname"] or attribute) == FETCHER_HOOK:
            return True
    return False


def _distribution_of(catalog: Catalog, name: str) -> str:
    try:
        return catalog.entry(name).distribution
    except PluginNotFoundError:
        return "(unknown distribution)"


def _fetcher_conflict(catalog: Catalog, first: str, second: str, how: str) -> PluginConflictError:
    return PluginConflictError(
        f"cogworker plugins {first!r} (distribution {_distribution_of(catalog, first)!r}) and "
        f"{second!r} (distribution {_distribution_of(catalog, second)!r}) {how} and both "
        f"provide the fetch strategy ({FETCHER_HOOK}), which only one plugin may provide. "
        f"Activate only one of them, e.g. --plugin no:{first} or --plugin no:{second}."
    )


# -- 3. loading ------------------------------------------------------------------------


def load_plugins(catalog: Catalog, names: Iterable[str]) -> pluggy.PluginManager:
    """Import and register ``names`` (sorted) in a new plugin manager and validate it.

    Raises :class:`PluginLoadError` (from the import or validation error) naming the plugin
    and its distribution, :class:`PluginConflictError` when two exclusive fetchers are
    active. ``COGWORKER_TRACE_PLUGINS=1`` logs every hook call at DEBUG.
    """
    pm = PluginManager()
    pm.add_hookspecs(hookspecs)
    arm_addhooks(pm)
    for name in sorted(set(names)):
        entry = catalog.entry(name)
        plugin = entry.load()
        try:
            pm.register(plugin, name=name)  # also runs the plugin's cogworker_addhooks
        except Exception as exc:
            raise PluginLoadError(name, entry.distribution, exc) from exc
    _check_exclusive_fetcher(catalog, pm)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        name = pm.get_name(exc.plugin) or repr(exc.plugin)
        cause = _with_hook_suggestion(pm, exc)
        raise PluginLoadError(name, _distribution_of(catalog, name), cause) from exc
    if tracing_requested():
        pm.add_hookcall_monitoring(_trace_before, _trace_after)
    return pm


def _with_hook_suggestion(
    pm: pluggy.PluginManager, exc: pluggy.PluginValidationError
) -> pluggy.PluginValidationError:
    """``exc`` with "did you mean 'cogworker_heartbeat'?" for each misspelt hook name."""
    specified = sorted(name for name in hookspecs.ALL_HOOKS)
    unknown = [
        name for name, caller in vars(pm.hook).items()
        if isinstance(caller, pluggy.HookCaller) and caller.spec is None
        and any(impl.plugin is exc.plugin for impl in caller.get_hookimpls())
    ]
    hints = []
    for name in sorted(unknown):
        close = difflib.get_close_matches(name, specified, n=1, cutoff=0.6)
        hints.append(f"{name}: did you mean {close[0]!r}?" if close
                     else f"{name}: no cogworker hook has a similar name")
    if not hints:
        return exc
    message = f"{exc} ({'; '.join(hints)}; docs/reference/hooks.md lists every hook)"
    return pluggy.PluginValidationError(exc.plugin, message)


def job_options_of(catalog: Catalog, names: Iterable[str]) -> list[tuple[str, list[object]]]:
    """What the plugins ``names`` declare with ``cogworker_job_options``, without
    registering them: for plugins deactivated by name, whose options stay accepted."""
    return [(name, list(cast("Iterable[object]", result or ())))
            for name, result in declared_by(catalog, names, "cogworker_job_options")]


def declared_by(catalog: Catalog, names: Iterable[str], hook: str) -> list[tuple[str, object]]:
    """What the plugins ``names`` answer to the argument-less declaration ``hook``
    (``cogworker_job_options``, ``cogworker_broker_schemes``), imported but not
    registered; a plugin without that hook is left out. Import errors propagate."""
    parser = PluginManager()
    declared: list[tuple[str, object]] = []
    for name in sorted(set(names)):
        plugin = catalog.entry(name).load()
        for attribute in dir(plugin):
            opts = parser.parse_hookimpl_opts(plugin, attribute)
            if opts is not None and (opts["specname"] or attribute) == hook:
                declared.append((name, getattr(plugin, attribute)()))
    return declared


def _check_exclusive_fetcher(catalog: Catalog, pm: pluggy.PluginManager) -> None:
    caller = pm.hook.cogworker_make_fetcher
    exclusive = [
        impl.plugin_name
        for impl in caller.get_hookimpls()
        if not (impl.trylast or impl.wrapper or impl.hookwrapper)
    ]
    if len(exclusive) > 1:
        raise _fetcher_conflict(catalog, exclusive[0], exclusive[1], "are both active")


def _trace_before(
    hook_name: str, hook_impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, object]
) -> None:
    plugins = ", ".join(impl.plugin_name for impl in reversed(hook_impls)) or "none"
    logger.debug("hook %s called (plugins: %s) with %r", hook_name, plugins, dict(kwargs))


def _trace_after(
    outcome: pluggy.Result[object],
    hook_name: str,
    hook_impls: Sequence[pluggy.HookImpl],
    kwargs: Mapping[str, object],
) -> None:
    if outcome.exception is not None:
        logger.debug("hook %s raised %r", hook_name, outcome.exception)
    else:
        logger.debug("hook %s returned %r", hook_name, outcome.get_result())


# -- 4. listing ------------------------------------------------------------------------


def describe(catalog: Catalog, pm: pluggy.PluginManager) -> list[PluginInfo]:
    """Every cataloged plugin plus active ``module.path:`` ones, sorted by name.

    Inactive plugins are listed without importing them, so their ``hooks`` are empty.
    """
    names = set(catalog) | {name for name, _ in pm.list_name_plugin() if is_local_plugin(name)}
    infos: list[PluginInfo] = []
    for name in sorted(names):
        entry = catalog.entry(name)
        plugin = pm.get_plugin(name)
        callers = pm.get_hookcallers(plugin) if plugin is not None else None
        hooks = tuple(sorted(caller.name for caller in callers or ()))
        infos.append(PluginInfo(name, entry.distribution, entry.version, plugin is not None, hooks))
    return infos
