"""Choosing the broker: which plugin owns which URL scheme.

Each broker plugin declares the URL schemes it serves (the ``cogworker_broker_schemes``
hook returns a :class:`BrokerSchemes`) and builds its broker when asked
(``cogworker_make_broker``, firstresult: it returns None for a URL it does not own). At
most one active broker plugin may own a scheme, and at most one may answer when no URL is
configured (the built-in ``redis`` plugin: the private redis-server). A URL whose scheme no
active plugin owns is a :class:`~cogworker.core.errors.ConfigurationError` that names the
plugins and the schemes they own (:func:`unknown_scheme_error`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cogworker.core.errors import ConfigurationError, PluginConflictError

NO_URL = ""
"""The "scheme" of an unset URL in :func:`scheme_owners`' mapping."""

_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")


def url_scheme(url: str | None) -> str:
    """The scheme of ``url``, lower-cased (``redis+sentinel``); :data:`NO_URL` for None or
    "". Raises ``ValueError`` for text that has no ``scheme://`` in front."""
    if not url:
        return NO_URL
    scheme, separator, _rest = url.partition("://")
    scheme = scheme.lower()
    if not separator or _SCHEME.fullmatch(scheme) is None:
        raise ValueError(f"{url.split('@')[-1][:40]!r}... is not a broker URL: it needs a "
                         "scheme in front, e.g. redis://localhost:6379/0")
    return scheme


@dataclass(frozen=True, slots=True)
class BrokerSchemes:
    """What a broker plugin declares: the URL schemes it owns (lower-case, without
    ``://``), and whether it answers when no URL is configured."""

    schemes: tuple[str, ...]
    without_url: bool = False

    def __post_init__(self) -> None:
        bad = [scheme for scheme in self.schemes if _SCHEME.fullmatch(scheme) is None]
        if bad:
            raise ValueError(f"broker URL scheme {bad[0]!r} is not a scheme: use lower-case "
                             "letters, digits, '+', '-' and '.', without '://' (e.g. 'redis')")
        if not self.schemes and not self.without_url:
            raise ValueError("a broker plugin declares at least one URL scheme, or "
                             "without_url=True")


def scheme_owners(declared: Iterable[tuple[str, BrokerSchemes]]) -> dict[str, str]:
    """Scheme → the plugin that owns it (:data:`NO_URL` for the one answering without a
    URL), from ``(plugin name, declaration)`` pairs.

    Raises :class:`~cogworker.core.errors.PluginConflictError` naming both plugins when
    two claim one scheme (or both answer without a URL).
    """
    owners: dict[str, str] = {}
    for plugin, declaration in declared:
        claimed = [*declaration.schemes, *([NO_URL] if declaration.without_url else [])]
        for scheme in claimed:
            previous = owners.setdefault(scheme, plugin)
            if previous != plugin:
                what = "the broker used when no URL is set" if scheme == NO_URL else \
                    f"the URL scheme {scheme}://"
                raise PluginConflictError(
                    f"broker plugins {previous!r} and {plugin!r} both claim {what}; "
                    f"deactivate one of them (--plugin no:{previous} or --plugin no:{plugin})")
    return owners


def unknown_scheme_error(field: str, url: str | None, owners: Mapping[str, str],
                         inactive: Mapping[str, str] | None = None) -> ConfigurationError:
    """The error for a broker URL (setting ``field``) no active broker plugin owns: it
    names every active broker plugin with its schemes, and the installed broker plugins
    that are not active (``inactive``: scheme → plugin), saying which one to activate
    when one owns the scheme. The URL itself is not repeated (it may hold a password):
    only its scheme."""
    scheme = url_scheme(url)
    shown = "no URL" if scheme == NO_URL else f"{scheme}://..."
    offered = _by_plugin(owners)
    accepted = (f"a URL whose scheme an active broker plugin owns ({offered})" if offered else
                "a URL of an active broker plugin, but no broker plugin is active: "
                "activate one (the default is redis)")
    inactive = inactive or {}
    if scheme in inactive:
        name = inactive[scheme]
        accepted += (f"; {shown} belongs to the installed plugin {name!r}, which is not "
                     f"active: activate it (--plugin {name}, or {name!r} in the plugins "
                     "setting)")
    elif inactive:
        accepted += f"; installed but not active: {_by_plugin(inactive)}"
    return ConfigurationError(field, shown, accepted)


def _by_plugin(owners: Mapping[str, str]) -> str:
    """``plugin: scheme://, ...; plugin: ...`` of a scheme → plugin mapping."""
    by_plugin: dict[str, list[str]] = {}
    for scheme, plugin in sorted(owners.items()):
        by_plugin.setdefault(plugin, []).append("no URL" if scheme == NO_URL else f"{scheme}://")
    return "; ".join(f"{plugin}: {', '.join(schemes)}" for plugin, schemes in
                     sorted(by_plugin.items()))


def inactive_broker_schemes(active: Iterable[str]) -> dict[str, str]:
    """Scheme → plugin for the installed broker plugins not among ``active`` (imported, not
    registered; only for an error message, so a plugin that fails to import is left out
    rather than hiding the error)."""
    from cogworker.core import plugins  # the catalog of installed plugins; imports hooks

    catalog = plugins.discover()
    found: dict[str, str] = {}
    for name in sorted(set(catalog) - set(active)):
        try:
            declared = plugins.declared_by(catalog, [name], "cogworker_broker_schemes")
        except Exception:  # a broken plugin must not hide the real error
            continue
        for _name, result in declared:
            if isinstance(result, BrokerSchemes):
                found.update(dict.fromkeys(result.schemes, name))
    return found
