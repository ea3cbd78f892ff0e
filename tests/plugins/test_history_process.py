"""The ``history`` plugin in a real ``cogworker run`` process, read by ``cogworker history``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import redis

import cogworker
from helpers.workers import WorkerProcess, write_app

APP = '''
import cogworker

app = cogworker.App()


@app.job(name="Greet")
def greet(name):
    return "hello " + name


@app.job(name="Explode", retry=False)
def explode():
    raise LookupError("no such thing")
'''


def test_a_worker_process_records_every_run_and_the_cli_reads_them(
    tmp_path: Path, redis_url: str, namespace: str, redis_client: redis.Redis,
) -> None:
    write_app(tmp_path, APP)
    client = cogworker.App(redis_url=redis_url, namespace=namespace)
    for name in ("ann", "bob", "cy"):
        client.push({"class": "Greet", "args": [name]})
    failed_jid = client.push({"class": "Explode", "args": [], "retry": False})
    client.close()
    common = ["--redis-url", redis_url, "--namespace", namespace]

    worker = WorkerProcess(tmp_path, "jobapp:app",
                           ["--plugin", "history", "--burst", *common]).start()
    assert worker.process is not None
    assert worker.process.wait(timeout=60) == 0, worker.output()

    shown = subprocess.run(
        [sys.executable, "-m", "cogworker", "history", "--json", "--asc", *common],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["total"] == 4
    greets = [r for r in data["records"] if r["class"] == "Greet"]
    assert sorted(r["args"] for r in greets) == ['["ann"]', '["bob"]', '["cy"]']
    assert all(r["status"] == "success" and r["duration"] >= 0 for r in greets)
    [failure] = [r for r in data["records"] if r["class"] == "Explode"]
    assert failure["jid"] == failed_jid
    assert failure["status"] == "failed"
    assert failure["error_class"] == "LookupError"
    assert failure["backtrace"][0] == "Traceback (most recent call last):"
    assert failure["backtrace"][-1] == "LookupError: no such thing"
