"""A worker's first workflow steps run on several processor threads at once, and each
imports the workflow machinery on first use: those imports must not deadlock.

Each check runs in a fresh interpreter (nothing of ``cogworker.workflows`` imported yet),
where three threads released together by a barrier take the plugin's three first-use
paths: a step's marker read, a group's launch (the plugin's own job) and ``app.result``.
Before the imports went through the package, Python broke the import-lock cycle between
them with an ImportError (or a ``_DeadlockError``) in every such run.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

RACE = r"""
import json
import threading

import cogworker
from cogworker.plugins import workflows as plugin
from cogworker.plugins.workflows_names import GROUP_LAUNCH, MARKER

app = cogworker.App(redis_url="memory://", plugins=("memory", "no:redis"))
app.hooks  # the plugins configured, as in a worker: the launch job is registered
launch = app.registry.resolve(GROUP_LAUNCH).target
barrier = threading.Barrier(3)
failures = []


def marker():
    plugin._marker({MARKER: "not a marker"})  # logged as malformed: None


def launch_group():
    try:
        launch(None, {})  # the import first; then the empty spec fails
    except KeyError:
        pass


def result():
    app.result("a-jid")


def run(path):
    barrier.wait()
    try:
        path()
    except BaseException as exc:
        failures.append(f"{path.__name__}: {exc!r}")


threads = [threading.Thread(target=run, args=(path,)) for path in (marker, launch_group, result)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
app.close()
print(json.dumps(failures))
"""


@pytest.mark.parametrize("attempt", range(5))
def test_three_threads_importing_the_workflow_machinery_at_once_all_succeed(
        attempt: int) -> None:
    done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], done.stderr[-3000:]
