"""``cogworker plugins``: list installed plugins and preview which ones a worker activates."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import click

from cogworker.core import plugins
from cogworker.core.config_sources import load_settings
from cogworker.core.errors import CogworkerError
from cogworker.core.settings import Settings

USAGE_EXIT = 2
HEADERS = ("NAME", "DISTRIBUTION", "VERSION", "ACTIVE", "HOOKS")


class PluginUsageError(click.ClickException):
    """One line on stderr (``Error: ...``) and exit status 2."""

    exit_code = USAGE_EXIT


@click.command("plugins")
@click.option(
    "--plugin",
    "changes",
    multiple=True,
    metavar="NAME|no:NAME",
    help="Activate NAME, or deactivate it with no:NAME (repeatable), as for run.",
)
@click.option(
    "--fetch",
    "fetch",
    metavar="NAME",
    help="The default fetch plugin (setting 'fetch', default: reliable).",
)
@click.option(
    "-C",
    "--config",
    "config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Config file whose plugin settings to preview.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def plugins_command(
    changes: tuple[str, ...], fetch: str | None, config: Path | None, as_json: bool
) -> None:
    """List every installed plugin and whether a worker would activate it.

    Settings come from the same sources as for run (config file, COGWORKER_* environment),
    then these options. Only active plugins are imported; the others show no hooks.
    """
    try:
        settings = load_settings(
            config_path=config, cli={"fetch": fetch, "plugins": changes or None}
        )
        infos = plugin_table(settings)
    except CogworkerError as exc:
        raise PluginUsageError(str(exc)) from exc
    click.echo(render_json(infos) if as_json else render_text(infos))


def plugin_table(settings: Settings) -> list[plugins.PluginInfo]:
    """Discover, resolve and load as a worker would, then describe every plugin."""
    catalog = plugins.discover()
    active = plugins.resolve_active(catalog, settings.fetch, settings.plugins, settings)
    return plugins.describe(catalog, plugins.load_plugins(catalog, active))


def render_json(infos: Sequence[plugins.PluginInfo]) -> str:
    """One JSON array of objects with the :class:`PluginInfo` fields."""
    rows = [
        {
            "name": info.name,
            "distribution": info.distribution,
            "version": info.version,
            "active": info.active,
            "hooks": list(info.hooks),
        }
        for info in infos
    ]
    return json.dumps(rows, indent=2)


def render_text(infos: Sequence[plugins.PluginInfo]) -> str:
    """An aligned table; inactive plugins show ``-`` for hooks (they are not imported)."""
    rows = [HEADERS] + [
        (
            info.name,
            info.distribution,
            info.version,
            "yes" if info.active else "no",
            ", ".join(info.hooks) if info.hooks else "-",
        )
        for info in infos
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADERS) - 1)]
    lines = []
    for *cells, hooks in rows:
        padded = [cell.ljust(width) for cell, width in zip(cells, widths, strict=True)]
        lines.append("  ".join([*padded, hooks]))
    return "\n".join(lines)
