"""``cogworker metrics [--class NAME] [--since 1h] [--json]`` and ``cogworker metrics serve``.

Parsing and printing only: the figures come from :class:`cogworker.api.metrics.Metrics`,
the exporter from :mod:`cogworker.prometheus`.
"""

from __future__ import annotations

import re
from typing import Any

import click

from cogworker.api.metrics import Metrics, MetricsUnavailableError
from cogworker.app import App
from cogworker.cli.common import CogworkerUsageError, app_options, handle_errors, opened_app
from cogworker.cli.output import json_option, print_json, print_table
from cogworker.core.errors import ConfigurationError
from cogworker.plugins.metrics.options import MetricsOptions, metrics_options

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DEFAULT_PORT = 9191


def parse_since(text: str) -> float:
    """``30m``, ``1h``, ``1d``, ``90s`` as seconds; a usage error (exit 2) otherwise."""
    match = _DURATION.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise CogworkerUsageError(
            f"--since {text!r}: give a duration above 0 with a unit, e.g. 30m, 1h, 1d, 90s")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def milliseconds(value: float | None) -> str:
    """A duration in ms for the table: ``0.4ms``, ``12ms``, ``3.2s``; ``-`` for none."""
    if value is None:
        return "-"
    if value < 10:
        return f"{value:.1f}ms"
    if value < 1000:
        return f"{value:.0f}ms"
    return f"{value / 1000:.1f}s"


def options_of(app: App) -> MetricsOptions:
    try:
        return metrics_options(app.settings.plugin_options,
                               app.settings.sources.get("plugin_options"))
    except ConfigurationError as exc:
        raise CogworkerUsageError(str(exc)) from exc


def metrics_of(app: App) -> Metrics:
    options = options_of(app)
    return Metrics(app, minute_retention=options.minute_retention,
                   hour_retention=options.hour_retention)


@click.group("metrics", invoke_without_command=True)
@app_options
@click.option("--class", "job_class", metavar="NAME", help="Only this job class.")
@click.option("--since", "since", default="1h", show_default=True, metavar="DURATION",
              help="The window: 30m, 1h, 1d... (up to hour_retention, 8 days).")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="At most this many class and queue rows (default: max_series, 100).")
@json_option
@click.pass_context
@handle_errors
def metrics_group(ctx: click.Context, /, job_class: str | None, since: str,
                  limit: int | None, as_json: bool, **options: Any) -> None:
    """Per job class and queue over a window: processed, failed, failure %, mean and the
    estimated p50/p95/p99 run time (the metrics plugin gathers them). `serve` runs the
    Prometheus exporter."""
    if ctx.invoked_subcommand is not None:
        ctx.obj = options
        return
    seconds = parse_since(since)
    with opened_app(options) as app:
        metrics = metrics_of(app)
        try:
            rows = metrics.summaries(seconds, job_class=job_class,
                                     limit=limit or options_of(app).max_series)
        except ValueError as exc:
            raise CogworkerUsageError(f"--since {since}: {exc}") from exc
        except MetricsUnavailableError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        print_json({"since": seconds, "class": job_class,
                    "rows": [row.to_dict() for row in rows]})
        return
    if not rows:
        which = f" of class {job_class!r}" if job_class else ""
        click.echo(f"no runs{which} in the last {since} (is the metrics plugin on in the "
                   "workers? --plugin metrics)")
        return
    print_table(["CLASS", "QUEUE", "PROCESSED", "FAILED", "FAIL %", "MEAN", "P50", "P95",
                 "P99"], [
        (row.job_class, row.queue, row.processed, row.failed, f"{row.failure_rate:.1%}",
         milliseconds(row.mean_ms), milliseconds(row.p50_ms), milliseconds(row.p95_ms),
         milliseconds(row.p99_ms)) for row in rows])


@metrics_group.command("serve")
@app_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback by default; 0.0.0.0 for every address).")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT,
              show_default=True, help="Port to listen on.")
@handle_errors
def serve_command(host: str, port: int, **options: Any) -> None:
    """Serve the Prometheus exporter at http://HOST:PORT/metrics until interrupted."""
    from cogworker.core.errors import DependencyError
    from cogworker.prometheus import require_prometheus_client

    try:
        require_prometheus_client()
    except DependencyError as exc:  # as `cogworker web` without its extra: exit 2
        raise CogworkerUsageError(str(exc)) from exc
    from cogworker.prometheus.serving import serve

    parent = click.get_current_context().parent
    given = dict(parent.obj or {}) if parent is not None else {}
    merged = {name: value or given.get(name) or value for name, value in options.items()}
    with opened_app(merged) as app:
        limits = options_of(app)
        serve(app.broker, host, port, max_series=limits.max_series,
              max_queues=limits.max_queues,
              ready=lambda bound: click.echo(f"serving Prometheus metrics at "
                                             f"http://{host}:{bound}/metrics", err=True))
