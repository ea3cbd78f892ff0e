"""A worker SIGKILLed right after a batch job's settle (which pushed the callback) and
before its ack: the job runs again, and its second settle pushes nothing, so the callback
runs exactly once (checked from the ledger, outside Redis)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

import cogworker
from cogworker.redis.keys import KeySchema
from delivery.conftest import APP_HEADER, StartAppWorker
from delivery.support import assert_drained
from helpers.workers import Ledger, wait_until

pytestmark = pytest.mark.slow

APP = APP_HEADER + '''
@app.job(name="work")
def work(n):
    record(cogworker.current_job().jid, "work", "done", n)


@app.job(name="on_success")
def on_success(bid, counts):
    record(bid, "on_success", "callback", counts["succeeded"])


@app.job(name="on_complete")
def on_complete(bid, counts):
    record(bid, "on_complete", "callback", counts["total"])
'''

CRASH_PLUGIN = '''
import os
import signal
from pathlib import Path

import cogworker

MARK = Path(os.environ["TEST_DIR"]) / "crashed"


@cogworker.hookimpl(tryfirst=True)
def cogworker_server_middleware(app):
    """Outermost: runs after the batches middleware settled the job, before the ack."""
    def crash_after_settle(ctx, call_next):
        result = call_next()
        if ctx.job.get("class") == "work" and not MARK.exists():
            MARK.write_text("crashed")
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    return crash_after_settle
'''


def client(redis_url: str, namespace: str) -> cogworker.App:
    app = cogworker.App(redis_url=redis_url, namespace=namespace)
    for name in ("work", "on_success", "on_complete"):
        app.job(name=name)(lambda *args: None)
    return app


@pytest.mark.timeout(90)
def test_a_kill_between_settle_and_ack_runs_the_job_twice_and_the_callback_once(
        redis_url: str, redis_client: redis.Redis, keys: KeySchema, namespace: str,
        ledger: Ledger, app_worker: StartAppWorker, tmp_path: Path) -> None:
    app_dir = tmp_path / "app"
    app_dir.mkdir(parents=True, exist_ok=True)
    (app_dir / "crashplug.py").write_text(CRASH_PLUGIN, encoding="utf-8")
    app = client(redis_url, namespace)
    try:
        with app.batch("one job", on_success=app.registry.resolve("on_success").name,
                       on_complete="on_complete") as batch:
            app.push({"class": "work", "args": [1]})
        doomed = app_worker(APP, redis_url, "--plugin", "crashplug:", concurrency=1)
        assert doomed.process is not None
        doomed.process.wait(timeout=60)  # killed itself after the settle, before the ack
        assert (tmp_path / "crashed").exists()
        settled = app.batches.get(batch.bid)  # the callbacks were pushed before the kill
        assert settled is not None and set(settled.fired) == {"complete", "success"}
        assert redis_client.llen(keys.queue("default")) == 2  # one processor: not fetched
        survivor = app_worker(APP, redis_url)
        wait_until(lambda: ledger.count("done") == 2 and ledger.count("callback") >= 2, 60,
                   lambda: f"ledger: {ledger.events()}\n{survivor.output()[-3000:]}")
        wait_until(lambda: redis_client.llen(keys.queue("default")) == 0, 30)
        assert survivor.stop() == 0
        callbacks = [(e.name, e.jid) for e in ledger.events("callback")]
        assert sorted(callbacks) == [("on_complete", batch.bid), ("on_success", batch.bid)]
        assert ledger.events("done")[0].pid == doomed.pid
        info = app.batches.get(batch.bid)
        assert info is not None and info.state == "success"
        assert_drained(redis_client, keys)
    finally:
        app.close()
