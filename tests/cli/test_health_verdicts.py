"""The verdicts of :mod:`cogworker.api.health` on a memory broker with a hand-moved clock:
beat ages from the last-beat stamp and from the presence record's TTL, the allowance, the
readiness rules, pidfiles and a restarted container's stale record of the same pid."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogworker.api.health import (
    check_host,
    check_identity,
    check_pidfile,
    read_pidfile,
    this_host,
)
from cogworker.cli import cli
from cogworker.core.settings import Settings
from cogworker.testing.memory_broker import MemoryBroker
from cogworker.worker.pidfile import remove_pidfile, write_pidfile

SETTINGS = Settings(heartbeat_interval=5.0, heartbeat_ttl=60.0)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def broker(clock: Clock) -> MemoryBroker:
    return MemoryBroker(clock)


def _beat(broker: MemoryBroker, identity: str, *, holds_jobs: bool = True,
          quiet: bool = False, **info: Any) -> None:
    facts = {"hostname": this_host(), "pid": 4242, "started_at": 1.0, "ready": True,
             "heartbeat_interval": 2.0, "heartbeat_ttl": 20.0, **info}
    broker.processes.beat(identity, facts, 0, quiet, ["default"], ttl=facts["heartbeat_ttl"],
                          holds_jobs=holds_jobs)


@pytest.mark.parametrize("holds_jobs", [True, False], ids=["last-beat", "presence-ttl"])
def test_a_beat_is_live_up_to_two_of_its_own_intervals(broker: MemoryBroker, clock: Clock,
                                                       holds_jobs: bool) -> None:
    _beat(broker, "w1", holds_jobs=holds_jobs)
    clock.now += 3.5
    live = check_identity(broker, SETTINGS, "w1")
    assert live.healthy and live.reason == "ok: 1 process(es) of w1 live; oldest beat 3.5s ago"
    [process] = live.processes
    assert (process.beat_age, process.allowed) == (3.5, 4.0)  # its interval, not SETTINGS'
    clock.now += 1.0
    late = check_identity(broker, SETTINGS, "w1")
    assert not late.healthy
    assert late.reason == "w1: last beat 4.5s ago, allowed 4s (2 x heartbeat_interval 2s)"


def test_a_record_without_its_settings_is_judged_by_the_probers(broker: MemoryBroker,
                                                                clock: Clock) -> None:
    broker.processes.beat("old", {"hostname": this_host(), "pid": 1}, 0, False, [],
                          ttl=60.0, holds_jobs=False)
    clock.now += 9.0
    [process] = check_identity(broker, SETTINGS, "old").processes
    assert (process.healthy, process.beat_age, process.allowed) == (True, 9.0, 10.0)


def test_readiness_needs_fetching_not_quiet(broker: MemoryBroker) -> None:
    _beat(broker, "starting", ready=False)
    _beat(broker, "quiet", quiet=True, pid=4343)
    _beat(broker, "fetching", pid=4444)
    assert check_identity(broker, SETTINGS, "starting").healthy  # live all the same
    assert check_identity(broker, SETTINGS, "starting", readiness=True).reason == (
        "starting: not fetching yet (starting, or stopping)")
    assert check_identity(broker, SETTINGS, "quiet", readiness=True).reason == (
        "quiet: quiet (fetching nothing)")
    assert check_identity(broker, SETTINGS, "fetching", readiness=True).healthy
    host = check_host(broker, SETTINGS, readiness=True)
    assert not host.healthy and host.reason.endswith("(2 of 3 processes failing)")


def test_the_newest_record_of_a_reused_pid_is_the_only_one_judged(broker: MemoryBroker,
                                                                  clock: Clock) -> None:
    _beat(broker, "before-restart", started_at=10.0, pid=1)
    clock.now += 15.0  # that one stopped beating; the container restarted, pid 1 again
    _beat(broker, "after-restart", started_at=20.0, pid=1)
    report = check_host(broker, SETTINGS)
    assert report.healthy
    assert [process.identity for process in report.processes] == ["after-restart"]
    _beat(broker, "other-pid", started_at=5.0, pid=77)
    clock.now += 5.0  # both are 5 s late now, and other-pid was not replaced
    assert not check_host(broker, SETTINGS).healthy


def test_a_pidfile_names_a_running_worker_or_says_why_not(broker: MemoryBroker,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "w.pid"
    write_pidfile(path)
    _beat(broker, "me", pid=os.getpid())
    assert check_pidfile(broker, SETTINGS, path).healthy
    _beat(broker, "child", pid=99999, supervisor=f"{this_host()}:{os.getpid()}:abcdef012345")
    assert {process.identity for process in
            check_pidfile(broker, SETTINGS, path).processes} == {"me", "child"}

    remove_pidfile(path, pid=os.getpid() + 1)  # names another process: kept
    assert path.exists()
    remove_pidfile(path)
    assert not path.exists()
    path.write_text("not a pid\n")
    assert read_pidfile(path) == (None, f"pidfile {path} holds 'not a pid', not a process id")
    path.write_text(f"{_unused_pid()}\n")
    assert check_pidfile(broker, SETTINGS, path).reason == (
        f"pidfile {path} names pid {_unused_pid()}, which is not running")


def _unused_pid() -> int:
    """``pid_max``: pids run below it, so this one is never in use."""
    pid_max = Path("/proc/sys/kernel/pid_max")
    return int(pid_max.read_text()) if pid_max.exists() else 4_194_304


def test_a_broker_that_cannot_be_reached_is_a_failed_check_with_json_for_probes() -> None:
    result = CliRunner().invoke(cli, ["health", "--redis-url", "redis://127.0.0.1:1/0",
                                      "--json"])
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["healthy"] is False and report["processes"] == []
    assert report["reason"].startswith("cannot reach Redis at redis://127.0.0.1:1/0")
