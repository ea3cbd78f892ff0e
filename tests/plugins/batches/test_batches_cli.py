"""``cogworker batches list|show|cancel`` against a batch on the test's Redis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogworker.app import App
from cogworker.cli import cli
from helpers.cli import Run, command_runner


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Run:
    return command_runner(cli, redis_url, namespace, tmp_path, monkeypatch)


def make_batch(app: App) -> str:
    @app.job(name="work")
    def work(n: int) -> None: ...

    @app.job(name="done")
    def done(bid: str, counts: dict[str, int]) -> None: ...

    with app.batch("nightly import", on_complete=done) as batch:
        work.perform_async(1)
        work.perform_async(2)
    return batch.bid


def test_list_and_show_print_the_batch(app: App, run: Run) -> None:
    bid = make_batch(app)

    listed = run("batches", "list")
    assert listed.exit_code == 0, listed.output
    assert bid in listed.output and "nightly import" in listed.output
    shown = run("batches", "show", bid, "--json")
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["state"] == "running" and data["counts"]["pending"] == 2
    assert data["callbacks"] == ["complete"] and len(data["pending_jobs"]) == 2
    text = run("batches", "show", bid)
    assert "2 total, 2 pending" in text.output


def test_show_and_cancel_of_an_unknown_batch_exit_1(app: App, run: Run) -> None:
    assert run("batches", "show", "nope").exit_code == 1
    assert run("batches", "cancel", "nope", "--yes").exit_code == 1


def test_cancel_asks_then_deletes_the_waiting_jobs(app: App, run: Run) -> None:
    bid = make_batch(app)

    refused = run("batches", "cancel", bid)  # no terminal to ask: refused, nothing changed
    assert refused.exit_code == 2
    done = run("batches", "cancel", bid, "--yes")

    assert done.exit_code == 0, done.output
    assert "2 waiting job(s) deleted" in done.output
    assert app.broker.queues.size("default") == 0
    info = app.batches.get(bid)
    assert info is not None and info.state == "cancelled"
