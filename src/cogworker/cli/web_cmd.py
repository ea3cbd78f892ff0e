"""``cogworker web``: serve the dashboard with uvicorn (needs ``cogworker[web]``).

Parsing and wiring only: :mod:`cogworker.web.server` decides where it may listen.
"""

from __future__ import annotations

from typing import Any

import click

from cogworker.cli.common import CogworkerUsageError, app_options, handle_errors, obtain_app
from cogworker.cli.logging_setup import configure_logging
from cogworker.core.errors import ConfigurationError, PluginError


@click.command("web")
@app_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback needs an auth plugin "
                   "(cogworker_web_authorize) or --insecure-no-auth.")
@click.option("--port", default=7474, show_default=True, type=click.IntRange(1, 65535),
              help="Port to listen on.")
@click.option("--read-only", is_flag=True, help="Hide every action and refuse every change.")
@click.option("--insecure-no-auth", is_flag=True,
              help="Listen on a non-loopback address without any authentication.")
@click.option("--plugin", "plugins", multiple=True, metavar="NAME",
              help="Activate a plugin (e.g. one implementing cogworker_web_authorize); "
                   "repeatable.")
@handle_errors
def web_command(host: str, port: int, read_only: bool, insecure_no_auth: bool,
                plugins: tuple[str, ...], **options: Any) -> None:
    """Serve the dashboard (Overview, Jobs, Schedules, Workers, History, Locks, Metrics) on
    HOST:PORT, with the Prometheus exporter at /metrics."""
    try:
        from cogworker.web.server import UnsafeBindError, serve
        from cogworker.web.settings import WebSettings
    except ImportError as exc:
        raise CogworkerUsageError(
            f"the dashboard needs its extra: pip install 'cogworker[web]' ({exc})") from exc
    cli_settings = {"plugins": list(plugins)} if plugins else None
    app = obtain_app(**options, cli_settings=cli_settings)
    configure_logging(app.settings.log_level, app.settings.log_format)
    try:
        serve(app, WebSettings(read_only=read_only), host, port,
              insecure_no_auth=insecure_no_auth)
    except (UnsafeBindError, PluginError, ConfigurationError) as exc:
        raise CogworkerUsageError(str(exc)) from exc
    finally:
        app.close()
