"""``cogworker busy`` (also ``cogworker workers``): every live process and its running jobs.

Parsing and printing only: the data comes from :class:`cogworker.api.ProcessSet` and
:class:`cogworker.api.WorkSet`, which a process refreshes on each heartbeat.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from typing import Any

import click

from cogworker.api import Process, ProcessSet, Work, WorkSet
from cogworker.api.processes import by_supervisor
from cogworker.app import App
from cogworker.cli.common import app_options, handle_errors, opened_app
from cogworker.cli.output import iso_time, json_option, print_json, print_table, seconds


def _snapshot(app: App) -> tuple[list[Process], dict[str, list[tuple[str, Work]]]]:
    processes = by_supervisor(ProcessSet(app))
    running: dict[str, list[tuple[str, Work]]] = defaultdict(list)
    for identity, tid, work in WorkSet(app):
        running[identity].append((tid, work))
    return processes, running


def _as_json(processes: list[Process], running: dict[str, list[tuple[str, Work]]],
             now: float) -> list[dict[str, Any]]:
    return [{**process.to_dict(), "jobs": [
        {"thread": tid, "jid": work.job.get("jid"), "class": work.job.get("class"),
         "queue": work.queue, "args": work.job.get("args"), "run_at": work.run_at,
         "runtime": max(now - work.run_at, 0.0)} for tid, work in running[process.identity]]}
        for process in processes]


def _print_frame(processes: list[Process], running: dict[str, list[tuple[str, Work]]],
                 now: float) -> None:
    if not processes:
        click.echo("no live processes")
        return
    for process in processes:
        state = "quiet" if process.is_quiet else "active"
        capacity = process.concurrency if process.concurrency is not None else "?"
        up = f" up {seconds(now - process.started_at)}" if process.started_at else ""
        under = f"  supervisor {process.supervisor}" if process.supervisor else ""
        click.echo(f"{process.identity}  busy {process.busy}/{capacity}  {state}  queues "
                   f"{','.join(dict.fromkeys(process.queues)) or '-'}{up}{under}")
        jobs = running[process.identity]
        if not jobs:
            click.echo("  (no running jobs)")
            continue
        rows = [(str(work.job.get("jid", "?")), str(work.job.get("class", "?")), work.queue,
                 seconds(max(now - work.run_at, 0.0)),
                 json.dumps(work.job.get("args", []), ensure_ascii=False)[:50])
                for _tid, work in sorted(jobs, key=lambda item: item[1].run_at)]
        print_table(["  JID", "CLASS", "QUEUE", "RUNTIME", "ARGS"],
                    [("  " + row[0], *row[1:]) for row in rows])


@click.command("busy")
@app_options
@click.option("--watch", is_flag=True, help="Refresh until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
              help="Seconds between refreshes with --watch.")
@json_option
@handle_errors
def busy_command(watch: bool, interval: float, as_json: bool, **options: Any) -> None:
    """Every live process with its running jobs: class, jid, queue and runtime.

    What runs is what each process reported at its last heartbeat.
    """
    with opened_app(options) as app:
        try:
            while True:
                processes, running = _snapshot(app)
                now = time.time()
                if as_json:
                    print_json(_as_json(processes, running, now))
                else:
                    if watch:
                        click.clear()
                        click.echo(f"{iso_time(now)}  (every {interval:g}s; Ctrl-C to stop)")
                    _print_frame(processes, running, now)
                if not watch:
                    return
                time.sleep(interval)
        except KeyboardInterrupt:
            return  # Ctrl-C ends --watch: exit status 0
