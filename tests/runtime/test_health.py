"""``cogworker health`` against real ``cogworker run`` processes, and the systemd protocol.

A live worker passes every form of the check (its identity, its pidfile, its host); once it
was SIGKILLed the check fails with one line saying why, as soon as its last beat is older
than allowed (short heartbeat settings: seconds, not the defaults' minute). A worker under
``NOTIFY_SOCKET`` tells a datagram socket the test binds READY=1, WATCHDOG=1 on its beats
and STOPPING=1 when stopped.
"""

from __future__ import annotations

import json
import signal
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cogworker.app import App
from cogworker.cli import cli
from helpers.workers import wait_until
from runtime.support import StartWorker, identity_of

pytestmark = pytest.mark.slow

# Beats every second, allowed two; a SIGKILLed worker fails the check about 2 s later.
HEALTH_APP = """
import os
import time

import cogworker

app = cogworker.App(heartbeat_interval=1.0, heartbeat_ttl=30, poll_interval=0.3)


@app.job(name="Work")
def work(tag):
    return tag


@app.job(name="Hold")
def hold(started_file, release_file):
    open(started_file, "w").close()
    while not os.path.exists(release_file):
        time.sleep(0.05)
"""


Health = Callable[..., Result]


@pytest.fixture
def health(redis_url: str, namespace: str) -> Health:
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(cli, ["health", "--redis-url", redis_url, "--namespace",
                                   namespace, *args])

    return run


def _until_exit(health: Health, code: int, *args: str, timeout: float = 20,
                says: str | None = None) -> Result:
    """Run the check until it exits with ``code`` (and prints ``says``, when given): a beat
    is an event, waited for, never a duration assumed."""
    results: list[Result] = []

    def settled() -> bool:
        results.append(health(*args))
        return results[-1].exit_code == code and (
            says is None or results[-1].output.strip() == says)

    wait_until(settled, timeout,
               lambda: f"health {args} never exited {code}; last: {results[-1].output!r}")
    return results[-1]


def test_health_passes_for_a_live_worker_and_fails_once_it_was_sigkilled(
    start_worker: StartWorker, health: Health, tmp_path: Path,
) -> None:
    pidfile = tmp_path / "worker.pid"
    worker = start_worker(HEALTH_APP, "--pidfile", str(pidfile))
    identity = identity_of(worker)
    assert pidfile.read_text().strip() == str(worker.pid)

    by_identity = _until_exit(health, 0, "--identity", identity)
    assert by_identity.output.startswith(f"ok: 1 process(es) of {identity} live")
    assert _until_exit(health, 0, "--pidfile", str(pidfile)).exit_code == 0
    on_host = _until_exit(health, 0, "--json")
    report = json.loads(on_host.output)
    assert report["healthy"] is True and report["check"] == "liveness"
    [process] = report["processes"]
    assert process["identity"] == identity and process["pid"] == worker.pid
    assert process["allowed"] == 2.0 and 0 <= process["beat_age"] <= 2.0

    worker.kill()
    dead = _until_exit(health, 1, "--identity", identity)
    assert f"{identity}: last beat " in dead.output
    assert "allowed 2s (2 x heartbeat_interval 1s)" in dead.output
    assert len(dead.output.strip().splitlines()) == 1
    assert pidfile.exists()  # SIGKILL leaves it: that is how "not running" is told
    gone = health("--pidfile", str(pidfile))
    assert gone.exit_code == 1
    assert gone.output.strip() == f"pidfile {pidfile} names pid {worker.pid}, which is not running"
    assert health().exit_code == 1  # the host check too: its one process is not live


def test_readiness_needs_a_fetching_worker_and_a_clean_stop_removes_the_pidfile(
    start_worker: StartWorker, health: Health, tmp_path: Path,
) -> None:
    pidfile = tmp_path / "worker.pid"
    worker = start_worker(HEALTH_APP, "--pidfile", str(pidfile))
    identity = identity_of(worker)
    ready = _until_exit(health, 0, "--identity", identity, "--readiness")
    assert ready.output.startswith(f"ok: 1 process(es) of {identity} ready")

    worker.signal(signal.SIGTSTP)  # quiet: still beating, fetching nothing
    _until_exit(health, 1, "--identity", identity, "--readiness",
                says=f"{identity}: quiet (fetching nothing)")
    _until_exit(health, 0, "--identity", identity)  # live all the same

    assert worker.stop() == 0
    assert not pidfile.exists()
    stopped = health("--identity", identity)
    assert stopped.exit_code == 1
    assert stopped.output.startswith(f"process {identity} has no presence record")


def test_a_draining_worker_is_live_but_not_ready(start_worker: StartWorker, health: Health,
                                                 pusher: App, tmp_path: Path) -> None:
    worker = start_worker(HEALTH_APP)
    identity = identity_of(worker)
    started, release = tmp_path / "started", tmp_path / "release"
    pusher.push({"class": "Hold", "args": [str(started), str(release)]})
    wait_until(started.exists, 30, worker.output)
    worker.signal(signal.SIGTERM)  # the stop waits for the running job
    _until_exit(health, 1, "--identity", identity, "--readiness",
                says=f"{identity}: not fetching yet (starting, or stopping)")
    _until_exit(health, 0, "--identity", identity)  # live while it drains
    release.touch()
    assert worker.process is not None and worker.process.wait(30) == 0


def test_a_supervisors_pidfile_checks_its_children(start_worker: StartWorker,
                                                   health: Health, tmp_path: Path) -> None:
    pidfile = tmp_path / "supervisor.pid"
    supervisor = start_worker(HEALTH_APP, "-P", "2", "--pidfile", str(pidfile), wait=False)
    wait_until(pidfile.exists, 30, supervisor.output)
    assert pidfile.read_text().strip() == str(supervisor.pid)  # the children wrote none
    reports: list[dict[str, Any]] = []

    def both_children_live() -> bool:
        result = health("--pidfile", str(pidfile), "--json")
        reports.append(json.loads(result.output))
        return result.exit_code == 0 and len(reports[-1]["processes"]) == 2

    wait_until(both_children_live, 60, lambda: f"never 2 live children: {reports[-1:]}")
    processes = reports[-1]["processes"]
    assert supervisor.pid not in {process["pid"] for process in processes}
    assert supervisor.stop() == 0
    assert not pidfile.exists()


def test_usage_errors_exit_2_and_an_empty_host_exits_1(health: Health) -> None:
    both = health("--identity", "x", "--pidfile", "/nonexistent/pid")
    assert both.exit_code == 2
    assert "give one of --identity, --pidfile or --host, not --identity and --pidfile" in (
        both.output)
    nobody = health("--host", "no-such-host.invalid")
    assert nobody.exit_code == 1
    assert nobody.output.startswith("no process registered on host no-such-host.invalid")
    missing = health("--pidfile", "/nonexistent/pid")
    assert missing.exit_code == 1
    assert missing.output.startswith("pidfile /nonexistent/pid does not exist")


def test_a_worker_under_notify_socket_sends_ready_watchdog_and_stopping(
    start_worker: StartWorker,
) -> None:
    name = f"cogworker-test-{uuid.uuid4().hex[:12]}"  # abstract namespace: no path limits
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(30)
        worker = start_worker(HEALTH_APP, env={"NOTIFY_SOCKET": f"@{name}"})
        messages = [_receive(sock)]
        while not messages[-1].startswith("READY=1\n"):  # the first beat comes before it
            messages.append(_receive(sock))
        assert messages[-1] == "READY=1\nSTATUS=fetching jobs"
        ready = len(messages) - 1
        while messages[ready:].count("WATCHDOG=1") < 2:  # one per beat, a second apart
            messages.append(_receive(sock))
        worker.stop()
        while not messages[-1].startswith("STOPPING=1"):
            messages.append(_receive(sock))
    assert set(messages[:ready]) <= {"WATCHDOG=1"}
    assert set(messages[ready + 1:-1]) == {"WATCHDOG=1"}


def _receive(sock: socket.socket) -> str:
    data, _sender = sock.recvfrom(4096)
    return data.decode()
