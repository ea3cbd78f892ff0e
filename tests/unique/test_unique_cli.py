"""``cogworker locks list|clear`` through click, against the test Redis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from cogworker.cli.locks_cmd import locks_group
from cogworker.core.payload import dumps
from cogworker.redis.keys import KeySchema
from helpers.cli import Run, command_runner
from unique.unique_helpers import lock_keys


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run("list", "--json")``: the command with this test's Redis and namespace."""
    return command_runner(locks_group, redis_url, namespace, tmp_path, monkeypatch)


@pytest.fixture
def two_locks(redis_client: redis.Redis, keys: KeySchema) -> tuple[str, str]:
    """A lock whose owner is queued (``Sync``) and one whose owner is nowhere."""
    live, lost = keys.unique("live"), keys.unique("lost")
    redis_client.set(live, "j-live", ex=600)
    redis_client.set(lost, "j-lost", ex=600)
    redis_client.sadd(keys.queues, "default")
    redis_client.lpush(keys.queue("default"), dumps(
        {"class": "Sync", "args": [], "queue": "default", "jid": "j-live"}))
    return live, lost


def test_list_shows_owner_ttl_job_and_where(run: Run, two_locks: tuple[str, str]) -> None:
    live, lost = two_locks
    result = run("list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["KEY", "KIND", "OWNER", "TTL", "JOB", "WHERE"]
    rows = [line.split() for line in lines[1:3]]
    assert [row[3].endswith("m") for row in rows] == [True, True]  # TTL in minutes
    assert [row[:3] + row[4:] for row in rows] == [
        [live, "push", "j-live", "Sync", "queued"],
        [lost, "push", "j-lost", "?", "nowhere", "(orphaned)"]]
    assert "2 lock(s), 1 orphaned" in lines[3]


def test_list_as_json_filtered_by_job(run: Run, two_locks: tuple[str, str]) -> None:
    result = run("list", "--job", "Sync", "--json")
    [lock] = json.loads(result.output)
    assert lock["key"] == two_locks[0]
    assert lock["owner"] == "j-live"
    assert (lock["where"], lock["job"], lock["orphaned"]) == ("queued", "Sync", False)


def test_list_says_when_there_are_none(run: Run, redis_client: redis.Redis) -> None:
    assert run("list").output.strip() == "no unique locks"


def test_clear_one_key_and_the_orphaned(
    run: Run, two_locks: tuple[str, str], redis_client: redis.Redis, keys: KeySchema
) -> None:
    live, _lost = two_locks
    refused = run("clear", "--orphaned")
    assert refused.exit_code == 2
    assert "Clear 1 orphaned lock(s): not confirmed" in refused.output
    assert run("clear", "--orphaned", "--yes").output.strip() == "cleared 1 orphaned lock(s)"
    assert lock_keys(redis_client, keys) == [live]
    assert run("clear", live).output.strip() == f"cleared {live}"
    assert run("clear", "live").output.strip() == "no lock live (already released or expired)"
    assert lock_keys(redis_client, keys) == []


@pytest.mark.parametrize(("args", "message"), [
    (("clear",), "locks clear: missing argument KEY: give KEY (one target) or --orphaned; "
                 "neither was given"),
    (("clear", "somekey", "--orphaned"), "locks clear: give either KEY or --orphaned, not both"),
])
def test_clear_needs_exactly_one_target(run: Run, args: tuple[str, ...], message: str,
                                        redis_client: redis.Redis) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output
