"""Exit codes as ``docs/reference/cli.md`` states them, from a fresh interpreter: an app
that fails to import, a bad URL, ``--watch`` without watchfiles, and ``--watch`` itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.workers import Ledger, WorkerProcess, wait_until, write_app
from runtime.support import STARTED, WORK_JOBS

pytestmark = pytest.mark.slow

NOWHERE = "redis://127.0.0.1:1/0"


def run_in(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(directory)}
    return subprocess.run([sys.executable, "-m", "cogworker", *args], cwd=directory, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(("source", "last_line"), [
    ("import cogworker\napp = cogworker.App(\n", "SyntaxError: '(' was never closed"),
    ("import cogworker\n\ndef boom():\n    return {}['missing']\n\nboom()\n",
     "KeyError: 'missing'"),
    ("import no_such_dependency\n", "ModuleNotFoundError: No module named 'no_such_dependency'"),
], ids=["syntax-error", "raises-at-import", "missing-dependency"])
@pytest.mark.parametrize("command", ["run", "stats", "enqueue"])
def test_an_app_that_fails_to_import_exits_2_with_its_own_traceback(
    tmp_path: Path, source: str, last_line: str, command: str,
) -> None:
    (tmp_path / "brokenapp.py").write_text(source, encoding="utf-8")
    extra = ["Job"] if command == "enqueue" else []

    done = run_in(tmp_path, command, "-A", "brokenapp:app", "--redis-url", NOWHERE, *extra)

    assert done.returncode == 2, done.stderr
    assert last_line in done.stderr
    assert str(tmp_path / "brokenapp.py") in done.stderr  # the user's file and line
    assert "click" not in done.stderr and "importlib" not in done.stderr  # trimmed
    assert "cogworker/cli" not in done.stderr
    assert len(done.stderr.splitlines()) < 15
    assert "-A/--app brokenapp failed to import" in done.stderr


def test_a_job_with_a_bad_core_option_exits_2_naming_it(tmp_path: Path) -> None:
    (tmp_path / "optapp.py").write_text(textwrap.dedent("""
        import cogworker
        app = cogworker.App()

        @app.job(retry=-2)
        def send(): ...
        """), encoding="utf-8")

    done = run_in(tmp_path, "stats", "-A", "optapp:app", "--redis-url", NOWHERE)

    assert done.returncode == 2
    assert "job 'optapp.send' (" in done.stderr and "optapp.py:5" in done.stderr
    assert "option retry=-2 is not valid" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("url", ["redis://localhost:notaport/0", "foo://bar",
                                 "redis://localhost:70000/0"])
@pytest.mark.parametrize("command", [["stats"], ["enqueue", "Job"], ["run", "--burst"]])
def test_a_bad_redis_url_exits_2(tmp_path: Path, url: str, command: list[str]) -> None:
    done = run_in(tmp_path, *command, "--redis-url", url)
    assert done.returncode == 2, done.stderr
    # A scheme no broker plugin owns is shown by its scheme only (the URL may hold a password)
    shown = "foo://..." if url.startswith("foo:") else url
    assert f"setting 'redis_url' has an invalid value {shown!r} (from --redis-url)" in done.stderr


def test_watch_without_watchfiles_says_how_to_install_it(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['watchfiles'] = None; sys.argv = ['cogworker', 'run', "
            "'--watch']; from cogworker.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--watch needs the watchfiles package: pip install 'cogworker[watch]'" in done.stderr


def test_watch_restarts_the_worker_on_a_code_change_and_ctrl_c_exits_0(
    tmp_path: Path, redis_url: str, namespace: str, ledger: Ledger,
) -> None:
    pytest.importorskip("watchfiles")
    write_app(tmp_path, WORK_JOBS)
    supervisor = WorkerProcess(tmp_path, "jobapp:app",
                               ["--watch", "--redis-url", redis_url, "--namespace", namespace],
                               env={"COGWORKER_TEST_LEDGER": str(ledger.path)}).start()
    try:
        wait_until(lambda: supervisor.output().count(STARTED) == 1, 30, supervisor.output)
        (tmp_path / "jobapp.py").write_text(textwrap.dedent(WORK_JOBS) + "\n# changed\n",
                                            encoding="utf-8")
        wait_until(lambda: supervisor.output().count(STARTED) == 2, 30, supervisor.output)
        assert "changed: jobapp.py; restarting the worker" in supervisor.output()
        supervisor.signal(signal.SIGINT)
        assert supervisor.process is not None
        assert supervisor.process.wait(30) == 0
        assert supervisor.output().count("stopped, identity=") == 2  # both stopped cleanly
    finally:
        supervisor.close()

