"""``cogworker status``, the trail in ``cogworker retry|dead show``, and trails cleared with
their entry (through the API and its ``cogworker_jobs_deleted`` hook)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import cogworker
from cogworker.api import DeadSet, RetrySet
from cogworker.app import App
from cogworker.cli import cli
from cogworker.core.broker import ATTEMPTS, Attempt
from cogworker.core.payload import encode
from cogworker.testing.memory_broker import MemoryBroker
from helpers.cli import Run, command_runner
from helpers.threaded_worker import working
from plugins.status.conftest import eventually


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Run:
    return command_runner(cli, redis_url, namespace, tmp_path, monkeypatch)


def test_status_prints_a_jobs_status(app: App, run: Run) -> None:
    @app.job(name="Noted")
    def noted() -> None:
        pass

    jid = noted.perform_async()
    assert jid is not None

    result = run("status", jid, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["jid"], data["state"], data["class"], data["queue"]) == (
        jid, "queued", "Noted", "default")

    text = run("status", jid)
    assert text.exit_code == 0
    assert [line.split()[:2] for line in text.output.splitlines()[:4]] == [
        ["jid", jid], ["state", "queued"], ["class", "Noted"], ["queue", "default"]]


def test_status_of_an_unknown_jid_says_so_and_exits_1(run: Run) -> None:
    result = run("status", "nosuchjid")

    assert result.exit_code == 1
    assert "no status for jid 'nosuchjid'" in result.output


class Doomed(cogworker.Job):
    retry = False

    def perform(self, order: int) -> None:
        raise LookupError(f"order {order} is gone")


def test_dead_show_prints_the_trail(app: App, run: Run) -> None:
    app.job(Doomed)
    jid = Doomed.perform_async(7)
    assert jid is not None
    with working(app):
        eventually(lambda: DeadSet(app).find(jid) is not None, lambda: DeadSet(app).size())

    result = run("dead", "show", jid)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = lines.index("attempts (1 failure, oldest first):")
    assert lines[header + 1].split() == ["ATTEMPT", "FAILED", "AT", "OUTCOME", "ERROR"]
    row = lines[header + 2].split()
    assert (row[0], row[2], row[3]) == ("1", "dead", "LookupError:")
    assert "order 7 is gone" in lines[header + 2]

    data: dict[str, Any] = json.loads(run("dead", "show", jid, "--json").output)
    assert [(a["attempt"], a["outcome"], a["error_class"]) for a in data["attempts"]] == [
        (1, "dead", "LookupError")]

    assert run("dead", "delete", jid, "--yes").exit_code == 0
    assert app.attempts(jid) == []


def _failed(app: App, set_name: str, jid: str) -> None:
    app.broker.sets.file(set_name, 1.0, encode(  # type: ignore[arg-type]
        {"class": "X", "args": [], "queue": "default", "jid": jid, "retry_count": 1}))
    store = app.broker.extension(ATTEMPTS)
    assert store is not None
    store.append(jid, Attempt(1, 1.0, "retrying", "ValueError", "x"))


def test_deleting_entries_through_the_api_clears_their_trails() -> None:
    """On the memory broker, whose sets know nothing of trails: the hook alone does it."""
    app = App(redis_url="memory://", plugins=("attempts",))
    app.use_broker(MemoryBroker())
    try:
        for jid in ("r1", "r2", "r3"):
            _failed(app, "retry", jid)
        _failed(app, "dead", "d1")

        assert RetrySet(app).delete("r1") == 1
        assert app.attempts("r1") == []
        assert [a.attempt for a in app.attempts("r2")] == [1]

        assert RetrySet(app).clear() == 2
        assert app.attempts("r2") == app.attempts("r3") == []
        assert [a.outcome for a in app.attempts("d1")] == ["retrying"]  # not in retry
    finally:
        app.close()
