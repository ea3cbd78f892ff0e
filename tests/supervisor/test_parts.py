"""The supervisor's parts that need no Redis: back-off, the -P values, lineage, and telling a
dead process from a live one on this host (real processes, a real SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from cogworker.cli import cli
from cogworker.supervisor import lineage
from cogworker.supervisor.backoff import HEALTHY_UPTIME, CrashStreak, respawn_delay
from cogworker.supervisor.children import resident_memory_mb
from cogworker.supervisor.host_recovery import certainly_dead, is_neighbour, process_start
from cogworker.supervisor.supervisor import describe_exit


def test_quick_crashes_in_a_row_wait_as_the_original_did() -> None:
    streak = CrashStreak()
    delays = [streak.record_exit(uptime=1.0) for _ in range(9)]
    assert delays == [0, 1, 2, 4, 8, 16, 32, 60, 60]
    assert [respawn_delay(n) for n in (0, 1, 2, 3)] == [0, 0, 1, 2]


def test_a_child_that_lived_long_enough_resets_its_slots_streak() -> None:
    streak = CrashStreak()
    for _ in range(5):
        streak.record_exit(uptime=0.5)
    assert streak.record_exit(uptime=HEALTHY_UPTIME + 1) == 0
    assert streak.streak == 0
    assert streak.record_exit(uptime=0.5) == 0  # the first quick crash after it: at once


@pytest.mark.parametrize("value", ["0", "x", "-2", "1.5", ""])
def test_a_bad_process_count_is_a_usage_error(value: str) -> None:
    result = CliRunner().invoke(cli, ["run", "-P", value])
    assert result.exit_code == 2, result.output
    assert "--processes" in result.output and "'auto'" in result.output


def test_processes_cannot_be_combined_with_burst_or_watch() -> None:
    for flag in ("--burst", "--watch"):
        result = CliRunner().invoke(cli, ["run", "-P", "2", flag])
        assert result.exit_code == 2 and "cannot be combined" in result.output


def test_max_memory_without_a_supervisor_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["run", "--max-memory", "100"])
    assert result.exit_code == 2 and "--max-memory needs --processes" in result.output


def test_a_child_adopts_its_supervisors_lineage_and_drops_it_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lineage, "_adopted", None)  # put back as it was after the test
    env = lineage.child_environment("host:1:abcdefabcdef", "0123456789ab", 1)
    adopted = lineage.adopt(dict(env))
    assert adopted is not None and adopted.supervisor == "host:1:abcdefabcdef"
    assert adopted.slot == lineage.slot() == 1
    assert lineage.identity_suffix() == "0123456789ab"
    assert lineage.process_facts()["supervisor"] == "host:1:abcdefabcdef"
    leftover = dict(env)
    lineage.adopt(leftover)
    assert not leftover
    lineage._adopted = None
    assert lineage.adopt({lineage.SUPERVISOR_ENV: "s", lineage.IDENTITY_SUFFIX_ENV: "bad"}) \
        is None
    assert len(lineage.identity_suffix()) == 12


def test_the_boot_id_is_read_where_the_system_has_one() -> None:
    if not lineage.BOOT_ID_FILE.exists():
        pytest.skip("no boot id on this system")
    assert lineage.boot_id() == lineage.BOOT_ID_FILE.read_text().strip()


def test_a_sigkilled_process_is_certainly_dead_and_a_live_one_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = time.time()
        assert not certainly_dead(child.pid, started)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert certainly_dead(child.pid, started)


def test_a_pid_held_by_a_younger_process_counts_as_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        own_start = process_start(child.pid)
        assert own_start is not None
        assert not certainly_dead(child.pid, own_start + 0.5)  # its own record
        assert certainly_dead(child.pid, own_start - 60)  # a record older than the pid
    finally:
        child.kill()
        child.wait()
    assert certainly_dead(os.getpid(), time.time())  # a record naming our pid is not us


def test_a_neighbour_shares_host_name_and_boot_id() -> None:
    info = {"hostname": "h", "boot_id": "b"}
    assert is_neighbour(info, "h", "b")
    assert not is_neighbour(info, "h", "other boot")
    assert not is_neighbour(info, "other host", "b")
    assert not is_neighbour({"hostname": "h"}, "h", "b")


def test_this_process_resident_memory_and_exit_descriptions() -> None:
    rss = resident_memory_mb(os.getpid())
    assert rss is not None and rss > 1
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(3) == "exited with status 3"
