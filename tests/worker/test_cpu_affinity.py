"""``cpu_affinity``: the grammar, the CPU a slot takes, the start-up checks, the pinning.

The checks run with a fake allowed set and with ``os.sched_setaffinity`` removed; the
pinning itself runs in a child interpreter (pinning the test process would pin the rest of
the suite). Real workers and a real supervisor are in ``tests/runtime/test_cpu_affinity.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogworker.cli import cli
from cogworker.core import cpu_affinity
from cogworker.core.config_sources import load_settings
from cogworker.core.cpu_affinity import CpuListError, choose_cpu, parse
from cogworker.core.errors import ConfigurationError
from cogworker.core.settings import Settings
from cogworker.supervisor import lineage
from cogworker.worker.cpu_pinning import planned_cpu

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="CPU pinning is Linux-only")


@pytest.mark.parametrize(("value", "enabled", "cpus"), [
    ("off", False, ()),
    (" OFF ", False, ()),
    ("auto", True, ()),
    ("Auto", True, ()),
    ("3", True, (3,)),
    ("0,2", True, (0, 2)),
    ("2,0", True, (2, 0)),
    ("0-3,6", True, (0, 1, 2, 3, 6)),
    (" 1 - 2 , 5 ", True, (1, 2, 5)),
    ("4-4", True, (4,)),
    ("65535", True, (65535,)),
])
def test_values_parse_to_off_auto_or_the_cpus_in_the_order_written(
    value: str, enabled: bool, cpus: tuple[int, ...],
) -> None:
    parsed = parse(value)
    assert (parsed.enabled, parsed.cpus) == (enabled, cpus)
    assert Settings(cpu_affinity=value).cpu_affinity == value


@pytest.mark.parametrize(("value", "reason"), [
    ("", "it is empty"),
    ("   ", "it is empty"),
    ("0-", "'0-' is not a CPU number or a low-high range"),
    ("-1", "'-1' is not a CPU number"),
    ("a", "'a' is not a CPU number"),
    ("0,,1", "'' is not a CPU number"),
    ("1.5", "'1.5' is not a CPU number"),
    ("٣", "'٣' is not a CPU number"),  # a digit, but not an ASCII one
    ("3-1", "the range '3-1' ends below where it starts"),
    ("0-2,1", "CPU 1 is listed twice"),
    ("65536", "CPU 65536 is above 65535"),
    ("0-999999999", "CPU 999999999 is above 65535"),
])
def test_bad_values_say_what_is_wrong_and_settings_refuse_them(value: str, reason: str) -> None:
    with pytest.raises(CpuListError) as wrong:
        parse(value)
    assert str(wrong.value).startswith(reason)
    with pytest.raises(ConfigurationError) as caught:
        Settings(cpu_affinity=value)
    assert caught.value.field == "cpu_affinity" and caught.value.value == value
    assert "off, auto, or a list of CPU numbers and low-high ranges such as 0,2 or 0-3,6" \
        in str(caught.value)


def test_only_text_is_a_cpu_affinity_in_code_but_a_file_may_give_one_cpu_as_a_number(
    tmp_path: Path,
) -> None:
    for value in (1, True, None, ["0"]):
        with pytest.raises(ConfigurationError):
            Settings(cpu_affinity=value)  # type: ignore[arg-type]
    (tmp_path / "cogworker.toml").write_text("cpu_affinity = 1\n", encoding="utf-8")
    from_file = load_settings(cwd=tmp_path, environ={})
    assert from_file.cpu_affinity == "1"
    (tmp_path / "cogworker.toml").write_text("cpu_affinity = true\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"cogworker\.toml"):
        load_settings(cwd=tmp_path, environ={})


def test_every_layer_sets_it_and_the_flag_wins(tmp_path: Path) -> None:
    (tmp_path / "cogworker.toml").write_text('cpu_affinity = "0-3"\n', encoding="utf-8")
    assert load_settings(cwd=tmp_path, environ={}).cpu_affinity == "0-3"
    environ = {"COGWORKER_CPU_AFFINITY": "auto"}
    from_env = load_settings(cwd=tmp_path, environ=environ)
    assert from_env.cpu_affinity == "auto"
    assert from_env.source_of("cpu_affinity") == "COGWORKER_CPU_AFFINITY"
    flagged = load_settings(cwd=tmp_path, environ=environ, cli={"cpu_affinity": "2"})
    assert (flagged.cpu_affinity, flagged.source_of("cpu_affinity")) == ("2", "command line")
    assert load_settings(code={"cpu_affinity": "1"}, cwd=tmp_path / "none",
                         environ={}).cpu_affinity == "1"


def test_slot_k_takes_the_kth_cpu_of_the_list_or_of_the_sorted_allowed_set() -> None:
    listed = parse("6,0-1")
    assert [choose_cpu(listed, slot, {0, 1, 6}) for slot in range(5)] == [6, 0, 1, 6, 0]
    auto = parse("auto")
    assert [choose_cpu(auto, slot, {5, 1, 3}) for slot in range(4)] == [1, 3, 5, 1]
    assert choose_cpu(auto, 7, {2}) == 2
    with pytest.raises(ValueError, match="off"):
        choose_cpu(parse("off"), 0, {0})
    with pytest.raises(ValueError, match="slot"):
        choose_cpu(auto, -1, {0})
    with pytest.raises(ValueError, match="empty"):
        choose_cpu(auto, 0, set())


def test_cpus_are_written_as_linux_writes_them() -> None:
    assert cpu_affinity.cpu_ranges({5, 0, 1, 2, 7, 8}) == "0-2,5,7-8"
    assert cpu_affinity.cpu_ranges({3}) == "3"
    assert cpu_affinity.cpu_ranges(set()) == ""


def test_off_plans_nothing_even_where_pinning_is_impossible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    assert planned_cpu(Settings(), slot=3, allowed={0}) is None


@linux_only  # elsewhere the platform check refuses first
def test_a_listed_cpu_outside_the_allowed_set_is_an_error_naming_it_and_the_set(
    tmp_path: Path,
) -> None:
    settings = load_settings(environ={"COGWORKER_CPU_AFFINITY": "0,7,9"}, cwd=tmp_path)
    with pytest.raises(ConfigurationError) as caught:
        planned_cpu(settings, slot=0, allowed={0, 1, 2, 3})
    message = str(caught.value)
    assert "'0,7,9'" in message and "(from COGWORKER_CPU_AFFINITY)" in message
    assert "only CPUs this process may run on (0-3); CPUs 7, 9 are not among them" in message
    with pytest.raises(ConfigurationError, match=r"\(0-3\); CPU 4 is not among them: list"):
        planned_cpu(settings.replace(cpu_affinity="4"), slot=0, allowed={0, 1, 2, 3})
    assert planned_cpu(settings.replace(cpu_affinity="3,1"), slot=1, allowed={0, 1, 2, 3}) == 1
    assert planned_cpu(settings.replace(cpu_affinity="auto"), slot=1, allowed={4, 2}) == 4


def test_without_sched_setaffinity_pinning_is_an_error_saying_it_needs_linux(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    with pytest.raises(ConfigurationError) as caught:
        planned_cpu(Settings(cpu_affinity="auto"), slot=0, allowed={0})
    message = str(caught.value)
    assert caught.value.field == "cpu_affinity" and "'auto'" in message
    assert f"off on this platform ({sys.platform})" in message
    assert "needs Linux (os.sched_setaffinity); set cpu_affinity to off" in message


@linux_only
def test_pinning_reaches_threads_started_before_it_and_threads_started_after_inherit() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    target = allowed[-1]
    script = textwrap.dedent(f"""
        import json, os, threading
        from pathlib import Path
        from cogworker.worker.cpu_pinning import pin_threads

        release = threading.Event()
        def wait():
            release.wait()
        earlier = [threading.Thread(target=wait) for _ in range(3)]
        for thread in earlier:
            thread.start()
        count = pin_threads({target})
        later = threading.Thread(target=wait)
        later.start()
        allowed = {{task.name: sorted(os.sched_getaffinity(int(task.name)))
                   for task in Path("/proc/self/task").iterdir()}}
        release.set()
        print(json.dumps({{"count": count, "allowed": allowed}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    report = json.loads(done.stdout)
    assert report["count"] == 4  # the main thread and the three started before
    assert len(report["allowed"]) == 5
    assert all(cpus == [target] for cpus in report["allowed"].values()), report


def test_a_child_reads_its_slot_from_the_supervisor_and_a_bad_one_reads_as_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lineage, "_adopted", None)  # put back as it was after the test
    assert lineage.slot() == 0
    env = lineage.child_environment("host:1:abcdefabcdef", "0123456789ab", 3)
    assert env[lineage.SLOT_ENV] == "3"
    adopted = lineage.adopt(dict(env))
    assert adopted is not None and adopted.slot == lineage.slot() == 3
    for bad in ("", "x", "-1"):
        lineage._adopted = None
        broken = {**env, lineage.SLOT_ENV: bad}
        found = lineage.adopt(broken)
        assert found is not None and found.slot == 0 and lineage.SLOT_ENV not in broken


@pytest.mark.parametrize("value", ["0-", "a", "3-1", "", "1,1"])
def test_a_bad_cpu_affinity_flag_is_a_usage_error(value: str) -> None:
    result = CliRunner().invoke(cli, ["run", "--cpu-affinity", value])
    assert result.exit_code == 2, result.output
    assert "--cpu-affinity" in result.output and repr(value) in result.output
    assert "0-3,6" in result.output


def test_a_bad_cpu_affinity_variable_is_a_usage_error(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["run"], env={"COGWORKER_CPU_AFFINITY": "0-"})
    assert result.exit_code == 2, result.output
    assert "'cpu_affinity'" in result.output and "COGWORKER_CPU_AFFINITY" in result.output
