"""``cogworker stats|queues|retry|dead`` with ``--json`` on what a real worker left behind,
and a retried job that runs again. The commands run in this process through click (they
are short-lived clients; starting an interpreter for each would only add seconds)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner, Result

from cogworker.cli import cli
from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from helpers.workers import Ledger, wait_until
from runtime.support import APP_HEADER, StartWorker, payload, push_raw

pytestmark = pytest.mark.slow

ADMIN_JOBS = APP_HEADER + '''

@app.job(name="Work")
class Work(cogworker.Job):
    def perform(self):
        record(self.jid, "Work", "ran")


@app.job(name="Later")
class Later(cogworker.Job):
    """Fails and waits an hour: it stays in the retry set."""

    def perform(self):
        record(self.jid, "Later", "attempt", self.job.get("retry_count", 0))
        raise ValueError("try again later")

    def retry_in(self, count, exc, job):
        return 3600


@app.job(name="Doomed")
class Doomed(cogworker.Job):
    def perform(self):
        record(self.jid, "Doomed", "attempt", self.job.get("retry_count", 0))
        raise KeyError("gone")
'''

Admin = Callable[..., Any]


@pytest.fixture
def command(redis_url: str, namespace: str, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``command("dead", "list")``: run it on this test's Redis and namespace."""
    monkeypatch.chdir(tmp_path)  # no project config file is picked up
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(cli, [*args, "--redis-url", redis_url, "--namespace", namespace],
                             catch_exceptions=False)

    return run


@pytest.fixture
def admin(command: Callable[..., Result]) -> Admin:
    """``admin("retry", "list")``: the command's ``--json`` output (it must exit 0)."""

    def run(*args: str) -> Any:
        result = command(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return run


def test_admin_commands_on_state_a_worker_produced(
    start_worker: StartWorker, admin: Admin, ledger: Ledger, redis_client: redis.Redis,
    keys: KeySchema, command: Callable[..., Result],
) -> None:
    works, later, doomed = ([new_jid() for _ in range(count)] for count in (3, 2, 2))
    push_raw(redis_client, keys, "default", *(payload("Work", [], "default", j) for j in works),
             *(payload("Later", [], "default", j) for j in later))
    push_raw(redis_client, keys, "mail", *(payload("Doomed", [], "mail", j, retry=False)
                                           for j in doomed))
    worker = start_worker(ADMIN_JOBS, "-q", "default", "-q", "mail")
    wait_until(lambda: ledger.count("ran") == 3 and redis_client.zcard(keys.retry) == 2
               and redis_client.zcard(keys.dead) == 2, 15, worker.output)

    wait_until(lambda: admin("stats")["processed"] == 3, 10, worker.output)  # flushed idle
    assert admin("stats") == {"processed": 3, "failed": 4, "enqueued": 0, "scheduled": 0,
                              "retry": 2, "dead": 2, "processes": 1, "busy": 0}
    assert worker.stop() == 0
    queues = {q["name"]: (q["size"], q["paused"]) for q in admin("queues")}
    assert queues == {"default": (0, False), "mail": (0, False)}

    retries = admin("retry", "list")
    assert sorted(entry["jid"] for entry in retries) == sorted(later)
    assert {(e["class"], e["queue"], e["retry_count"], e["error_class"], e["error_message"])
            for e in retries} == {("Later", "default", 1, "ValueError", "try again later")}
    assert admin("retry", "retry", later[0]) == {"moved": 1}
    assert admin("retry", "delete", later[1]) == {"deleted": 1}
    assert admin("retry", "list") == []

    dead = admin("dead", "list")
    assert sorted(entry["jid"] for entry in dead) == sorted(doomed)
    assert {(e["class"], e["queue"], e["error_class"]) for e in dead} == {
        ("Doomed", "mail", "KeyError")}
    assert admin("dead", "retry", doomed[0]) == {"moved": 1}
    assert admin("dead", "delete", "--all", "--yes") == {"deleted": 1}
    assert admin("dead", "list") == []
    sizes = {q["name"]: q["size"] for q in admin("queues")}
    assert sizes == {"default": 1, "mail": 1}
    unknown = command("dead", "retry", doomed[1])
    assert unknown.exit_code == 1
    assert f"no job with jid {doomed[1]!r} in the dead set" in unknown.stderr

    # The jobs put back run again on the next worker, with their failure count kept.
    again = start_worker(ADMIN_JOBS, "-q", "default", "-q", "mail")
    wait_until(lambda: ledger.count("attempt") == 6, 15, again.output)
    assert again.stop() == 0
    rerun = [(e.jid, e.detail) for e in ledger.events("attempt")[4:]]
    assert sorted(rerun) == sorted([(later[0], "1"), (doomed[0], "1")])
    assert [entry["jid"] for entry in admin("retry", "list")] == [later[0]]
    assert [entry["jid"] for entry in admin("dead", "list")] == [doomed[0]]
    assert admin("stats")["failed"] == 6

