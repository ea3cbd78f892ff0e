"""``cogworker stats|ctl``: the fleet's counters, and steering live worker processes.

Parsing and printing only: the work is done by :mod:`cogworker.api`. Every command takes
the app options and ``--json`` for machines; usage mistakes exit 2, failures exit 1.
"""

from __future__ import annotations

import time
from typing import Any

import click

from cogworker.api import ProcessSet, Stats, WorkSet
from cogworker.api.processes import by_supervisor
from cogworker.cli.common import app_options, handle_errors, one_target, opened_app
from cogworker.cli.output import json_option, plural, print_json, print_table

CONFIRM_TIMEOUT = 2.0  # seconds ctl quiet/resume waits to see the new state reported
CONFIRM_POLL = 0.05


@click.command("stats")
@app_options
@json_option
@handle_errors
def stats_command(as_json: bool, **options: Any) -> None:
    """Print the fleet's counters: processed, failed, enqueued, set sizes, processes."""
    with opened_app(options) as app:
        data: dict[str, int] = Stats(app).to_dict()
        data["processes"] = ProcessSet(app).size()
        data["busy"] = WorkSet(app).size()
    if as_json:
        print_json(data)
        return
    for name, value in data.items():
        click.echo(f"{name:<10} {value}")


# ctl -------------------------------------------------------------------------------------

@click.group("ctl")
def ctl_group() -> None:
    """Steer live worker processes: quiet (take no new jobs), resume, stop."""


@ctl_group.command("list")
@app_options
@json_option
@handle_errors
def ctl_list_command(as_json: bool, **options: Any) -> None:
    """List live processes with their identity (the name quiet/resume/stop take)."""
    with opened_app(options) as app:
        processes = by_supervisor(ProcessSet(app))
    if as_json:
        print_json([process.to_dict() for process in processes])
        return
    if not processes:
        click.echo("no live processes")
        return
    print_table(["IDENTITY", "BUSY", "STATE", "QUEUES", "SUPERVISOR"], [
        (p.identity, f"{p.busy}/{p.concurrency if p.concurrency is not None else '?'}",
         "quiet" if p.is_quiet else "active", ",".join(dict.fromkeys(p.queues)),
         p.supervisor or "-")
        for p in processes
    ])


def _signal_command(message: str, description: str) -> click.Command:
    @click.command(message, help=description)
    @app_options
    @click.argument("identity", required=False)
    @click.option("--all", "everything", is_flag=True, help="Every live process.")
    @json_option
    @handle_errors
    def command(identity: str | None, everything: bool, as_json: bool,
                **options: Any) -> None:
        one_target(identity, everything, f"ctl {message}", name="IDENTITY")
        with opened_app(options) as app:
            processes = ProcessSet(app)
            if identity is None:
                targets = list(processes)
            else:
                found = processes.get(identity)
                if found is None:
                    raise click.ClickException(
                        f"no live process with identity {identity!r} (it stopped, or its "
                        "heartbeat expired); `cogworker ctl list` shows the live ones")
                targets = [found]
            # PUBLISH returns how many subscribers got it: 0 means nobody listened.
            reached = [p.identity for p in targets if getattr(p, message)() > 0]
            pending = _unconfirmed(processes, reached, message)
        _report_signalled(message, reached, [p.identity for p in targets], pending, as_json)

    return command


def _unconfirmed(processes: ProcessSet, reached: list[str], message: str) -> list[str]:
    """Wait (up to CONFIRM_TIMEOUT) until each reached process reports the state that
    ``quiet``/``resume`` asked for, so `ctl list` right after shows it; the ones that
    have not reported it yet."""
    if message not in ("quiet", "resume"):
        return []
    wanted = message == "quiet"
    deadline = time.monotonic() + CONFIRM_TIMEOUT
    waiting = list(reached)
    while waiting:
        states = {identity: processes.get(identity) for identity in waiting}
        waiting = [identity for identity, process in states.items()
                   if process is not None and process.is_quiet != wanted]
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(CONFIRM_POLL)
    return waiting


def _report_signalled(message: str, reached: list[str], targets: list[str],
                      pending: list[str], as_json: bool) -> None:
    if as_json:
        print_json({"signal": message, "signalled": len(reached), "processes": reached,
                    "not_listening": [t for t in targets if t not in reached],
                    "pending": pending})
        return
    click.echo(f"sent {message} to {plural(len(reached), 'process', 'processes')}")
    for identity in targets:
        if identity not in reached:
            click.echo(f"warning: {identity} is alive but was not listening for signals",
                       err=True)
    for identity in pending:
        click.echo(f"note: {identity} got {message} but has not reported it yet (pending): "
                   "`cogworker ctl list` shows the new state once it does", err=True)


for _message, _description in (
    ("quiet", "Make a process (IDENTITY or --all) take no new jobs; running ones finish."),
    ("resume", "Make a quiet process (IDENTITY or --all) take jobs again."),
    ("stop", "Make a process (IDENTITY or --all) finish its jobs and exit."),
):
    ctl_group.add_command(_signal_command(_message, _description))


ADMIN_COMMANDS: list[click.Command] = [stats_command, ctl_group]
