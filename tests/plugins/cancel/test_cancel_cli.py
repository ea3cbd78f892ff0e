"""``cogworker cancel JID [JID...]``: its lines, ``--json``, and its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogworker.api import Queue
from cogworker.app import App
from cogworker.cli import cli
from helpers.cli import Run, command_runner

UNKNOWN = "0123456789abcdef01234567"


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Run:
    return command_runner(cli, redis_url, namespace, tmp_path, monkeypatch)


def test_cancel_removes_a_queued_job_and_says_so(app: App, run: Run) -> None:
    @app.job(name="note")
    def note() -> None: ...

    jid = note.perform_async()
    assert jid is not None
    result = run("cancel", jid)
    assert result.exit_code == 0, result.output
    assert result.output == f"{jid}  cancelled before it started (removed from queue default)\n"
    assert Queue(app, "default").size() == 0

    again = run("cancel", jid)
    assert again.exit_code == 0, again.output
    assert again.output == f"{jid}  too late: it already finished (cancelled already)\n"


def test_cancel_json_lists_every_jid_and_an_unknown_one_exits_1(app: App, run: Run) -> None:
    @app.job(name="note")
    def note() -> None: ...

    later = note.perform_in(3600)
    assert later is not None
    result = run("cancel", later, UNKNOWN, "--json")
    assert result.exit_code == 1, result.output
    assert json.loads(result.output) == [
        {"jid": later, "outcome": "cancelled", "where": "schedule"},
        {"jid": UNKNOWN, "outcome": "unknown", "where": ""}]

    other = "f" * 24
    text = run("cancel", other)
    assert text.exit_code == 1
    assert text.output == (f"{other}  unknown: no such job found; the cancellation is kept "
                           "in case it turns up\n")
    twice = run("cancel", other)  # recorded the first time: nothing more to do
    assert twice.exit_code == 0
    assert twice.output == f"{other}  too late: it already finished (cancelled already)\n"


def test_cancel_usage_errors_exit_2(run: Run) -> None:
    missing = run("cancel")
    assert missing.exit_code == 2
    assert "Missing argument 'JID [JID...]'" in missing.output
    blank = run("cancel", " ")
    assert blank.exit_code == 2
    assert "a JID cannot be empty" in blank.output
