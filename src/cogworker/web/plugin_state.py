"""Which observability plugins are on, and what a page says when one is off.

Reading needs no plugin (the workers that record do), so a page reads what is there; only
when the plugin is off in this app *and* nothing was recorded does it show how to turn the
plugin on (``templates/_plugin_off.html``) instead of an empty table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cogworker.app import App


@dataclass(frozen=True)
class PluginOff:
    """A plugin a page needs that is not active: its name and what it would record."""

    name: str
    records: str

    @property
    def flag(self) -> str:
        return f"--plugin {self.name}"

    @property
    def setting(self) -> str:
        return f'plugins = ["{self.name}"]'


RECORDS = {
    "history": "any run of a job",
    "metrics": "per-class run counts and timings",
    "status": "a job's live state and progress",
    "attempts": "a failed attempt",
}


def active_plugins(app: App) -> frozenset[str]:
    """The names of the plugins active in ``app``."""
    return frozenset(name for name, _plugin in app.hooks.plugin_manager.list_name_plugin())


def plugin_off(app: App, name: str) -> PluginOff | None:
    """None when plugin ``name`` is active, else what to tell the visitor."""
    if name in active_plugins(app):
        return None
    return PluginOff(name, RECORDS.get(name, "its data"))
