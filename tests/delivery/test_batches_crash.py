"""A worker SIGKILLed around a batch job's settle: right after it (the callbacks were
pushed) and before the ack, or after the job returned and before its settle. Either way
the job runs again, and the callbacks are pushed once (checked from the ledger, outside
Redis)."""

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
    record(cogworker.current_job().jid, "on_success", "callback", bid)


@app.job(name="on_complete")
def on_complete(bid, counts):
    record(cogworker.current_job().jid, "on_complete", "callback", bid)
'''

CRASH_PLUGIN_HEAD = '''
import os
import signal
from pathlib import Path

import cogworker

MARK = Path(os.environ["TEST_DIR"]) / "crashed"


def crash():
    if not MARK.exists():
        MARK.write_text("crashed")
        os.kill(os.getpid(), signal.SIGKILL)
'''

AFTER_SETTLE = CRASH_PLUGIN_HEAD + '''

@cogworker.hookimpl(trylast=True)
def cogworker_before_ack(app, raws):
    """After the batches plugin settled the ack batch's successes, before the ack."""
    crash()
'''

BEFORE_SETTLE = CRASH_PLUGIN_HEAD + '''

@cogworker.hookimpl(tryfirst=True)
def cogworker_server_middleware(app):
    """The job returned; its success is owed, not settled yet."""
    def crash_after_run(ctx, call_next):
        result = call_next()
        if ctx.job.get("class") == "work":
            crash()
        return result
    return crash_after_run
'''


def client(redis_url: str, namespace: str) -> cogworker.App:
    app = cogworker.App(redis_url=redis_url, namespace=namespace)
    for name in ("work", "on_success", "on_complete"):
        app.job(name=name)(lambda *args: None)
    return app


@pytest.mark.timeout(90)
@pytest.mark.parametrize(("plugin", "settled"), [(AFTER_SETTLE, True), (BEFORE_SETTLE, False)],
                         ids=["after-the-settle", "before-the-settle"])
def test_a_kill_around_the_settle_runs_the_job_twice_and_each_callback_once(
        redis_url: str, redis_client: redis.Redis, keys: KeySchema, namespace: str,
        ledger: Ledger, app_worker: StartAppWorker, tmp_path: Path, plugin: str,
        settled: bool) -> None:
    app_dir = tmp_path / "app"
    app_dir.mkdir(parents=True, exist_ok=True)
    (app_dir / "crashplug.py").write_text(plugin, encoding="utf-8")
    app = client(redis_url, namespace)
    try:
        with app.batch("one job", on_success=app.registry.resolve("on_success").name,
                       on_complete="on_complete") as batch:
            app.push({"class": "work", "args": [1]})
        doomed = app_worker(APP, redis_url, "--plugin", "crashplug:", concurrency=1)
        assert doomed.process is not None
        doomed.process.wait(timeout=60)  # killed itself after the settle, before the ack
        assert (tmp_path / "crashed").exists()
        seen = app.batches.get(batch.bid)  # pushed before the kill, or not yet
        assert seen is not None
        assert set(seen.fired) == ({"complete", "success"} if settled else set())
        survivor = app_worker(APP, redis_url)
        wait_until(lambda: ledger.count("done") == 2 and ledger.count("callback") >= 2, 60,
                   lambda: f"ledger: {ledger.events()}\n{survivor.output()[-3000:]}")
        wait_until(lambda: redis_client.llen(keys.queue("default")) == 0, 30)
        assert survivor.stop() == 0
        # one push each (one jid); a run repeats only when the kill caught it running
        pushed = {(e.name, e.detail, e.jid) for e in ledger.events("callback")}
        assert sorted((name, bid) for name, bid, _ in pushed) == [
            ("on_complete", batch.bid), ("on_success", batch.bid)]
        assert ledger.events("done")[0].pid == doomed.pid
        info = app.batches.get(batch.bid)
        assert info is not None and info.state == "success"
        assert_drained(redis_client, keys)
    finally:
        app.close()
