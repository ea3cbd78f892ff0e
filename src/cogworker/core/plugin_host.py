"""``PluginHost``: the narrow view of the application a plugin's hooks receive.

A plugin sees the settings, the broker contract, this process's identity and clock, the
hooks facade, the job registry, a logger of its own, its own options, ``extras`` (a
place to keep its per-app state under its name), and ``push``/``submit`` to enqueue jobs.
Nothing else: in particular no Redis client, so a plugin written against this view runs on
every broker.
:class:`cogworker.App` satisfies it structurally.

Options: a plugin's options live under ``plugin_options.<plugin name>`` in every settings
source. :meth:`PluginHostBase.options` returns that mapping as the settings hold it; the
plugin validates it in ``cogworker_configure`` (into a frozen dataclass of its own, kept in
``extras``) and reports a bad value as a
:class:`~cogworker.core.errors.ConfigurationError` naming the field in full
(``plugin_options.unique.orphan_report_interval``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, Protocol

from cogworker.core.broker import Broker
from cogworker.core.hooks import Hooks
from cogworker.core.payload import Payload
from cogworker.core.registry import JobRegistry
from cogworker.core.settings import Settings

PLUGIN_LOGGER_PREFIX = "cogworker.plugin."
"""Plugin loggers are children of ``cogworker``, so the CLI's logging set-up applies to them."""


def plugin_logger(plugin_name: str) -> logging.Logger:
    """The logger of plugin ``plugin_name``: ``cogworker.plugin.<name>``."""
    if not plugin_name:
        raise ValueError("a plugin logger needs the plugin's name, e.g. logger('acme')")
    return logging.getLogger(PLUGIN_LOGGER_PREFIX + plugin_name)


class PluginHostBase(Protocol):
    """Everything a plugin sees of the app but its broker (what exists before a broker is
    built)."""

    @property
    def settings(self) -> Settings:
        """The final, validated settings of this app."""
        ...

    @property
    def identity(self) -> str:
        """This process's identity (``<hostname>:<pid>:<12 hex>``), as it beats and holds
        jobs; a worker sets a fresh one at start."""
        ...

    @property
    def clock(self) -> Callable[[], float]:
        """The time pushes are stamped with, in epoch seconds (a test clock in tests)."""
        ...

    @property
    def hooks(self) -> Hooks:
        """The typed hooks facade, to call other plugins' hooks."""
        ...

    @property
    def registry(self) -> JobRegistry:
        """The jobs this app registered, by stored name."""
        ...

    @property
    def extras(self) -> MutableMapping[str, Any]:
        """Per-app state of plugins, each under its own name (``extras["unique"]``)."""
        ...

    def logger(self, plugin_name: str) -> logging.Logger:
        """A logger for plugin ``plugin_name``, configured with cogworker's own (see
        :func:`plugin_logger`)."""
        ...

    def options(self, plugin_name: str) -> Mapping[str, Any]:
        """Plugin ``plugin_name``'s options (``plugin_options.<name>``; {} when none are
        set), read-only, for the plugin to validate."""
        ...

    def push(self, payload: Mapping[str, Any]) -> str | None:
        """Push a raw payload dict (``class``, ``args``, ``queue``...) through the client
        chain, as ``perform_async`` does (a plugin enqueues a callback so). Returns the
        jid, or None when a middleware or a unique lock stopped the push."""
        ...

    def submit(self, payload: Payload) -> str | None:
        """Push a payload that is already complete (``class``, checked ``args``, ``queue``,
        ``jid``, ``retry``, ``created_at``) through the client chain; the jid or None."""
        ...


class PluginHost(PluginHostBase, Protocol):
    """What a plugin's hooks receive: :class:`PluginHostBase` and the broker."""

    @property
    def broker(self) -> Broker:
        """The broker contract (built on first use from the settings)."""
        ...
