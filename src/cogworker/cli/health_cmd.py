"""``cogworker health``: exit 0 when the named worker process(es) beat recently, else 1.

Parsing and printing only: the verdict comes from :mod:`cogworker.api.health`. Made for
orchestrators' probes (a Kubernetes ``exec`` probe, a monitoring script): one line saying
why, ``--json`` for a probe that parses, exit status 2 on a usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from cogworker.api.health import HealthReport, check_host, check_identity, check_pidfile
from cogworker.app import App
from cogworker.cli.common import (
    CogworkerUsageError,
    app_options,
    handle_errors,
    opened_app,
    redis_failure,
)
from cogworker.cli.output import json_option, print_json
from cogworker.core.errors import BrokerAuthenticationError, BrokerUnavailableError


@click.command("health")
@app_options
@click.option("--identity", metavar="ID", help="Check the process with this identity.")
@click.option("--pidfile", "pidfile_path", type=click.Path(dir_okay=False, path_type=Path),
              metavar="PATH", help="Check the process whose pid this file holds (a worker "
              "started with --pidfile; a supervisor's children with -P).")
@click.option("--host", metavar="NAME", help="Check every process of this host (default: "
              "this host, when neither --identity nor --pidfile is given).")
@click.option("--readiness", is_flag=True, help="Also require that the process fetches "
              "(started, not quiet, not stopping) and that the broker answers.")
@json_option
@handle_errors
def health_command(identity: str | None, pidfile_path: Path | None, host: str | None,
                   readiness: bool, as_json: bool, **options: Any) -> None:
    """Exit 0 when the worker process(es) beat within their interval, 1 otherwise.

    Liveness (the default): every process named has beaten within twice its
    heartbeat_interval. With --readiness, each also fetches jobs and the broker answers.
    One line says why; with --json, an object a probe can parse.
    """
    given = [name for name, value in (("--identity", identity), ("--pidfile", pidfile_path),
                                      ("--host", host)) if value is not None]
    if len(given) > 1:
        raise CogworkerUsageError(f"health: give one of --identity, --pidfile or --host, not "
                                  f"{' and '.join(given)}")
    with opened_app(options) as app:
        try:
            report = _check(app, identity, pidfile_path, host, readiness)
        except (BrokerUnavailableError, BrokerAuthenticationError) as exc:
            # the verdict a probe expects (exit 1, JSON with --json), not a bare error
            report = HealthReport("readiness" if readiness else "liveness",
                                  identity or str(pidfile_path or host or "this host"), False,
                                  redis_failure(app, exc).message)
    _print(report, as_json)
    sys.exit(0 if report.healthy else 1)


def _check(app: App, identity: str | None, pidfile_path: Path | None, host: str | None,
           readiness: bool) -> HealthReport:
    settings = app.settings
    if identity is not None:
        return check_identity(app, settings, identity, readiness=readiness)
    if pidfile_path is not None:
        return check_pidfile(app, settings, pidfile_path, readiness=readiness)
    return check_host(app, settings, host, readiness=readiness)


def _print(report: HealthReport, as_json: bool) -> None:
    if as_json:
        print_json(report.to_dict())
    else:
        click.echo(report.reason, err=not report.healthy)
