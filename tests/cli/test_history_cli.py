"""``cogworker history``: the table, filters, sorting, paging, JSON, and usage errors."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import redis

from cogworker.cli import cli
from cogworker.cli.history_cmd import duration_text, parse_moment
from cogworker.core.broker import HistoryRecord, HistoryRetention
from cogworker.redis.history_store import RedisHistoryStore
from cogworker.redis.keys import KeySchema
from cogworker.redis.scripts import Scripts
from helpers.cli import Run, command_runner

KEEP = HistoryRetention(max_age=30 * 86400, max_entries=1000, daily_ttl=86400)


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    return command_runner(cli, redis_url, namespace, tmp_path, monkeypatch)


@pytest.fixture
def seeded(redis_client: redis.Redis, keys: KeySchema) -> list[HistoryRecord]:
    """Four runs, oldest first: two of billing.Invoice (one failed), two of mail.Send."""
    base = int(time.time() * 1000) - 60_000
    specs = [("jid-a", "billing.Invoice", "billing", "success", 2_000_000),
             ("jid-b", "billing.Invoice", "billing", "failed", 15_000),
             ("jid-c", "mail.Send", "default", "success", 300),
             ("jid-c", "mail.Send", "default", "failed", 90_000_000)]
    records = [HistoryRecord(
        run_id=f"run-{i}", jid=jid, job_class=cls, queue=queue, status=status,  # type: ignore[arg-type]
        started_ms=base + i * 1000 - duration // 1000, finished_ms=base + i * 1000,
        duration_us=duration, args="[1]",
        error_class="KeyError" if status == "failed" else None,
        error_message="'sku'" if status == "failed" else None,
        backtrace=("Traceback (most recent call last):", "KeyError: 'sku'")
        if status == "failed" else ())
        for i, (jid, cls, queue, status, duration) in enumerate(specs)]
    RedisHistoryStore(redis_client, keys, Scripts(redis_client)).append(records, KEEP)
    return records


def jids_in(output: str) -> list[str]:
    return [line.split()[0] for line in output.splitlines()[1:-1]]


def test_the_table_lists_runs_newest_first(run: Run, seeded: list[HistoryRecord]) -> None:
    result = run("history")

    assert result.exit_code == 0, result.output
    header, *rows, footer = result.output.splitlines()
    assert header.split() == ["JID", "CLASS", "QUEUE", "STATUS", "FINISHED", "DURATION",
                              "ERROR"]
    assert [row.split()[0] for row in rows] == ["jid-c", "jid-c", "jid-b", "jid-a"]
    assert "1m 30s" in rows[0] and "KeyError: 'sku'" in rows[0]
    assert "2.00s" in rows[3]
    assert footer == "4 of 4 run(s)"


def test_filters_combine(run: Run, seeded: list[HistoryRecord]) -> None:
    assert jids_in(run("history", "--status", "failed").output) == ["jid-c", "jid-b"]
    assert jids_in(run("history", "--class", "billing.Invoice").output) == ["jid-b", "jid-a"]
    assert jids_in(run("history", "--queue", "default", "--status", "success").output) == [
        "jid-c"]
    assert jids_in(run("history", "--jid", "jid-c", "--asc").output) == ["jid-c", "jid-c"]
    assert run("history", "--class", "nobody").output.strip() == "no runs match"


def test_sorting_by_duration_and_a_time_range(run: Run, seeded: list[HistoryRecord]) -> None:
    slowest = run("history", "--sort", "duration", "--json")
    since = str(seeded[2].finished_at)
    recent = run("history", "--since", since, "--json")

    data = json.loads(slowest.output)
    assert [record["run_id"] for record in data["records"]] == ["run-3", "run-0", "run-1",
                                                                 "run-2"]
    assert [r["run_id"] for r in json.loads(recent.output)["records"]] == ["run-3", "run-2"]


def test_paging_by_limit_and_cursor(run: Run, seeded: list[HistoryRecord]) -> None:
    first = json.loads(run("history", "--limit", "3", "--json").output)
    assert first["total"] == 4
    assert first["cursor"]
    second = json.loads(run("history", "--limit", "3", "--cursor", first["cursor"],
                            "--json").output)

    assert [r["run_id"] for r in first["records"] + second["records"]] == [
        "run-3", "run-2", "run-1", "run-0"]
    assert second["cursor"] is None
    table = run("history", "--limit", "1")
    assert "more: --cursor " in table.output.splitlines()[-1]


def test_json_holds_the_whole_record(run: Run, seeded: list[HistoryRecord]) -> None:
    data = json.loads(run("history", "--status", "failed", "--limit", "1", "--json").output)

    [record] = data["records"]
    assert record["backtrace"] == ["Traceback (most recent call last):", "KeyError: 'sku'"]
    assert record["finished_at"].endswith("Z")
    assert record["duration"] == 90.0


@pytest.mark.parametrize(("args", "message"), [
    (["--status", "lost"], "Invalid value for '--status'"),
    (["--limit", "0"], "Invalid value for '--limit'"),
    (["--sort", "class"], "Invalid value for '--sort'"),
    (["--since", "yesterday"], "--since: cannot read 'yesterday' as a time"),
    (["--since", "1h", "--until", "2h"], "--since is later than --until"),
    (["--class", " "], "--class must not be empty"),
    (["--cursor", "!!"], "not a history cursor"),
])
def test_bad_input_exits_2_with_a_clear_message(run: Run, args: list[str], message: str) -> None:
    result = run("history", *args)

    assert result.exit_code == 2
    assert message in result.output


def test_a_combined_query_refuses_a_cursor_of_another(
    run: Run, seeded: list[HistoryRecord],
) -> None:
    cursor = json.loads(run("history", "--class", "mail.Send", "--limit", "1",
                            "--json").output)["cursor"]

    result = run("history", "--queue", "billing", "--cursor", cursor)

    assert result.exit_code == 2
    assert "another query" in result.output


def test_moments_and_durations_read_and_print() -> None:
    assert parse_moment("90s", "--since", now=1000.0) == 910.0
    assert parse_moment("2026-12-01", "--since") == 1_796_083_200.0
    assert parse_moment("2026-12-01T01:00:00+01:00", "--since") == 1_796_083_200.0
    assert parse_moment("1700000000.5", "--since") == 1_700_000_000.5
    assert [duration_text(s) for s in (0.0005, 0.0123, 4.2, 192, 7500)] == [
        "500us", "12.3ms", "4.20s", "3m 12s", "2h 5m"]
