"""``cogworker enqueue``: push one job by name from the shell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from cogworker.cli.common import CogworkerUsageError, app_options, handle_errors, obtain_app


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
    """Enqueue JOB_NAME with JSON_ARGS (a JSON array, default []). Prints the jid."""
    try:
        args = json.loads(json_args)
    except ValueError as exc:
        raise CogworkerUsageError(f"JSON_ARGS is not JSON: {exc}") from exc
    if not isinstance(args, list):
        raise CogworkerUsageError(
            f"JSON_ARGS must be a JSON array, e.g. '[1, \"a\"]', not {json_args}"
        )
    if delay is not None and delay < 0:
        raise CogworkerUsageError("--in must be >= 0 seconds")
    app = obtain_app(app_path=app_path, require=require, config=config, redis_url=redis_url,
                     namespace=namespace, environment=environment)
    definition = app.registry.get(job_name)
    payload: dict[str, Any] = dict(definition.options) if definition else {}
    payload.pop("unique_args", None)
    payload.update({"class": job_name, "args": args})
    if queue:
        payload["queue"] = queue
    if delay is not None:
        import time

        payload["at"] = time.time() + delay
    jid = app.push(payload)
    click.echo(jid if jid is not None else "skipped: a unique duplicate is already queued")
