"""A process that dies mid-job does not leave ``working`` behind: orphan recovery sets its
jobs back to ``queued`` (beyond the original), through both recovery paths.

* a real worker process SIGKILLed mid-job, its job put back by the next worker on the host
  (start-up recovery, ``recover_process``);
* a dead holder found by a running worker's orphan check (``recover_orphans``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogworker.app import App
from cogworker.core.broker import STATUS, StatusRecord
from helpers.threaded_worker import WAIT, working
from helpers.workers import WorkerProcess, wait_until, write_app
from plugins.status.conftest import eventually

pytestmark = pytest.mark.slow

FAST: dict[str, float] = {"heartbeat_interval": 0.5, "heartbeat_ttl": 2.0,
                          "orphan_threshold": 2.0, "orphan_check_interval": 1.0,
                          "poll_interval": 0.5, "timeout": 5.0}

APP = f'''
import time

import cogworker
from ledger_client import record

app = cogworker.App(plugins=("status",), concurrency=2, **{FAST!r})


@app.job(name="Hang")
def hang(jid_note):
    record(jid_note, "Hang", "start")
    time.sleep(600)
'''


@pytest.fixture
def workers(tmp_path: Path, redis_url: str, namespace: str,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[list[WorkerProcess]]:
    (tmp_path / "ledger").mkdir()
    monkeypatch.setenv("COGWORKER_TEST_LEDGER", str(tmp_path / "ledger"))
    write_app(tmp_path, APP)
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.close()


def start(tmp_path: Path, redis_url: str, namespace: str, *queues: str) -> WorkerProcess:
    args = ["--redis-url", redis_url, "--namespace", namespace]
    for queue in queues:
        args += ["-q", queue]
    worker = WorkerProcess(tmp_path, "jobapp:app", args).start()
    worker.wait_for_output(" started identity=", WAIT)
    return worker


def test_a_sigkilled_workers_job_is_queued_again(tmp_path: Path, redis_url: str,
                                                 namespace: str,
                                                 workers: list[WorkerProcess]) -> None:
    client = App(redis_url=redis_url, namespace=namespace, plugins=("status",))
    try:
        doomed = start(tmp_path, redis_url, namespace)
        workers.append(doomed)
        jid = client.push({"class": "Hang", "args": ["x"]})
        assert jid is not None
        wait_until(lambda: (s := client.status(jid)) is not None and s.state == "working",
                   WAIT, lambda: f"never working: {client.status(jid)}\n{doomed.output()}")

        doomed.kill()  # SIGKILL: its status stays "working"
        assert (s := client.status(jid)) is not None and s.state == "working"
        # The next worker on this host reads another queue only, so the job stays queued.
        workers.append(start(tmp_path, redis_url, namespace, "elsewhere"))

        wait_until(lambda: (s := client.status(jid)) is not None and s.state == "queued",
                   WAIT, lambda: f"still {client.status(jid)}\n{workers[-1].output()}")
        queued = client.status(jid)
        assert queued is not None and (queued.class_name, queued.queue) == ("Hang", "default")
        assert [json.loads(raw)["jid"]
                for raw in client.broker.queues.page("default", 0, 10)] == [jid]
    finally:
        client.close()


def test_the_orphan_check_sets_a_dead_holders_jobs_back_to_queued(redis_url: str,
                                                                  namespace: str) -> None:
    app = App(redis_url=redis_url, namespace=namespace, plugins=("status",),
              queues=("default",), **FAST)
    try:
        jid = app.push({"class": "Ghostly", "args": [], "queue": "elsewhere"})
        assert jid is not None
        broker, ghost = app.broker, "ghost-host:1:0123456789ab"
        broker.processes.beat(ghost, {"hostname": "ghost-host"}, 0, False, ("elsewhere",),
                              60.0, True)
        assert [w.raw for w in broker.held.claim(ghost, ["elsewhere"], 1).works]
        store = broker.extension(STATUS)
        assert store is not None
        now = time.time()
        store.write([StatusRecord(jid=jid, state="working", updated_at=now,
                                  expires_at=now + 600, class_name="Ghostly")])
        broker.processes.remove(ghost)  # gone: its last beat ages past the threshold

        with working(app):
            eventually(lambda: (s := app.status(jid)) is not None and s.state == "queued",
                       lambda: app.status(jid))
        assert broker.held.held(ghost) == []
    finally:
        app.close()
