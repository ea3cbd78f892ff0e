"""``cogworker enqueue``: push one job by name from the shell.

With ``-A`` the name is checked against the app's registry (with a did-you-mean) and the
arguments against the job's signature, so a typo is exit 2 here rather than 25 failures in
a worker. Without an app nothing can be checked; a note on stderr says so.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from cogworker.app import App
from cogworker.cli.common import CogworkerUsageError, app_options, handle_errors, opened_app
from cogworker.core.errors import JobArgumentError, JobCallError
from cogworker.core.job_definition import JobDefinition
from cogworker.core.payload import check_json_args


def _parse_args(json_args: str, job_name: str) -> list[Any]:
    try:
        args = json.loads(json_args)
    except ValueError as exc:
        raise CogworkerUsageError(f"JSON_ARGS is not JSON: {exc}") from exc
    if not isinstance(args, list):
        raise CogworkerUsageError(
            f"JSON_ARGS must be a JSON array, e.g. '[1, \"a\"]', not {json_args}"
        )
    try:
        return check_json_args(job_name, args)  # json.loads takes NaN and Infinity
    except JobArgumentError as exc:
        raise CogworkerUsageError(f"JSON_ARGS: {exc}") from exc


def _definition(app: App, job_name: str) -> JobDefinition:
    definition = app.registry.get(job_name)
    if definition is not None:
        return definition
    suggestion = app.registry.suggest(job_name)
    hint = f" Did you mean {suggestion!r}? (jobs are named by their full name)" \
        if suggestion else ""
    known = ", ".join(app.registry.names()[:10]) or "none"
    raise CogworkerUsageError(
        f"JOB_NAME: the app registers no job named {job_name!r}.{hint} Registered: {known}")


def check_signature(definition: JobDefinition, args: list[Any]) -> None:
    """Raise a usage error when ``args`` do not fit the job's parameters (the check every
    ``perform_async`` makes, :class:`cogworker.core.job_signature.CallSignature`)."""
    try:
        definition.call.positional(args, {}, shown=json.dumps(args, ensure_ascii=False))
    except JobCallError as exc:
        raise CogworkerUsageError(f"JSON_ARGS: {exc}") from exc


@click.command("enqueue")
@app_options
@click.argument("job_name")
@click.argument("json_args", default="[]")
@click.option("--queue", "-q", "queue", help="Queue (default: the job's own, else 'default').")
@click.option("--in", "delay", type=float, help="Run this many seconds from now.")
@handle_errors
def enqueue_command(
    app_path: str | None, require: tuple[str, ...], config: Path | None, redis_url: str | None,
    namespace: str | None, environment: str | None, job_name: str, json_args: str,
    queue: str | None, delay: float | None,
) -> None:
    """Enqueue JOB_NAME with JSON_ARGS (a JSON array, default []). Prints the jid.

    With -A the name and the arguments are checked against the app's job.
    """
    args = _parse_args(json_args, job_name)
    if delay is not None and delay < 0:
        raise CogworkerUsageError("--in must be >= 0 seconds")
    options = {"app_path": app_path, "require": require, "config": config,
               "redis_url": redis_url, "namespace": namespace, "environment": environment}
    with opened_app(options, server=True) as app:
        payload: dict[str, Any] = {}
        if app_path or require:
            definition = _definition(app, job_name)
            check_signature(definition, args)
            payload.update(definition.options)
        else:
            click.echo("note: no app given (-A), so the job name and its arguments were not "
                       "checked; a worker that does not know them fails the job", err=True)
        payload.update({"class": job_name, "args": args})
        if queue:
            payload["queue"] = queue
        if delay is not None:
            payload["at"] = time.time() + delay
        jid = app.push(payload)
    click.echo(jid if jid is not None else "skipped: a unique duplicate is already queued")
