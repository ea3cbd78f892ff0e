"""A bad setting on the ``cogworker run`` command line: exit status 2 and one line that
names the field (or plugin) and what is accepted, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.workers import write_app
from runtime.support import WORK_JOBS, cogworker_cli

pytestmark = pytest.mark.slow

# Nothing may start, so the Redis URL points nowhere: a run that got that far would hang
# on its first heartbeat instead of exiting.
NOWHERE = "redis://127.0.0.1:1/0"


@pytest.fixture
def in_app_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory holds the app module ``jobapp`` (and nothing else)."""
    write_app(tmp_path, WORK_JOBS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("COGWORKER_TEST_LEDGER", str(tmp_path / "unused-ledger"))
    return tmp_path


@pytest.mark.parametrize(("args", "reason"), [
    (("-c", "abc"), "Invalid value for '-c' / '--concurrency': 'abc' is not a valid integer"),
    (("-c", "0"), "setting 'concurrency' has an invalid value 0 (from --concurrency): "
                  "expected an integer from 1 to 1000"),
    (("-q", ""), "setting 'queues' has an invalid value '' (from --queue): "
                 "expected a non-empty queue name"),
    (("-q", "high,0"), "setting 'queues' has an invalid value 'high,0' (from --queue)"),
    (("-t", "-1"), "setting 'timeout' has an invalid value -1.0 (from --timeout)"),
    (("--plugin", "nosuch"), "no cogworker plugin named 'nosuch' is installed (named by the "
                             "command-line flag --plugin). Installed plugins: basic, "
                             "periodic-locks, redis, reliable, unique."),
    (("--plugin", "reliabel"), "no cogworker plugin named 'reliabel' is installed (named by "
                               "the command-line flag --plugin). Did you mean 'reliable'?"),
    (("--plugin", "no:basik"), "no cogworker plugin named 'basik' is installed (named by the "
                               "command-line flag --plugin). Did you mean 'basic'?"),
    (("-L", "no-such-folder/worker.log"), "cannot open the log file no-such-folder/worker.log "
                                          "for appending (No such file or directory)"),
], ids=["c-abc", "c-0", "q-empty", "q-weight", "t-negative", "plugin-unknown",
        "plugin-typo", "plugin-no-typo", "logfile"])
@pytest.mark.usefixtures("in_app_dir")
def test_a_bad_setting_exits_2_with_one_line_naming_it(args: tuple[str, ...],
                                                       reason: str) -> None:
    done = cogworker_cli("run", "-A", "jobapp:app", "--redis-url", NOWHERE, *args,
                         timeout=30)

    assert done.returncode == 2, done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert reason in error
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.usefixtures("in_app_dir")
def test_a_bad_plugin_from_the_environment_is_a_usage_error_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COGWORKER_PLUGINS", "uniqe")

    done = cogworker_cli("run", "-A", "jobapp:app", "--redis-url", NOWHERE, timeout=30)

    assert done.returncode == 2, done.stderr
    assert ("no cogworker plugin named 'uniqe' is installed (named by the environment variable "
            "COGWORKER_PLUGINS). Did you mean 'unique'?") in done.stderr


@pytest.mark.usefixtures("in_app_dir")
def test_a_bad_plugin_in_pyproject_names_the_file(in_app_dir: Path) -> None:
    pyproject = in_app_dir / "pyproject.toml"
    pyproject.write_text('[tool.cogworker]\nplugins = ["uniqe"]\n', encoding="utf-8")

    done = cogworker_cli("run", "-A", "jobapp:app", "--redis-url", NOWHERE, timeout=30)

    assert done.returncode == 2, done.stderr
    assert (f"no cogworker plugin named 'uniqe' is installed (named by the config file "
            f"{pyproject} [tool.cogworker]). Did you mean 'unique'?") in done.stderr
