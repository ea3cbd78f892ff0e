"""``retry|dead show``, ``scheduled``, ``queues show|clear|pause|resume`` through click."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import redis

from cogworker.cli import cli
from cogworker.core.backtrace import compress_backtrace
from cogworker.core.payload import dumps, new_jid
from cogworker.redis.keys import KeySchema
from helpers.cli import Run, command_runner

TRACE = ["Traceback (most recent call last):", '  File "jobs.py", line 12, in charge',
         "    return prices['missing']", "KeyError: 'missing'"]


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    return command_runner(cli, redis_url, namespace, tmp_path, monkeypatch)


def failed(backtrace: object, **fields: object) -> str:
    return dumps({"class": "charge", "args": [42, {"sku": "a"}], "queue": "billing",
                  "jid": new_jid(), "retry": 5, "retry_count": 2, "error_class": "KeyError",
                  "error_message": "'missing'", "failed_at": 1735722000.0,
                  "retried_at": 1735722060.5, "created_at": 1735721999.0,
                  "error_backtrace": backtrace, "tenant": "acme", **fields})


@pytest.mark.parametrize("stored", [compress_backtrace(TRACE), TRACE],
                         ids=["sidekiq7-compressed", "plain-list"])
def test_retry_show_prints_the_whole_record(run: Run, redis_client: redis.Redis,
                                            keys: KeySchema, stored: object) -> None:
    raw = failed(stored)
    jid = json.loads(raw)["jid"]
    redis_client.zadd(keys.retry, {raw: time.time() + 90})

    result = run("retry", "show", jid)

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["jid", jid]
    assert "class          charge" in lines
    assert "queue          billing" in lines
    assert "args           [42, {\"sku\": \"a\"}]" in lines
    assert "retry count    2 (retries allowed: 5)" in lines
    assert "error          KeyError: 'missing'" in lines
    assert "failed at      2025-01-01T09:00:00.000Z" in lines
    assert "retried at     2025-01-01T09:01:00.500Z" in lines
    assert any(line.startswith("next retry at  ") and "(in 1." in line for line in lines)
    assert "tenant         acme" in lines  # every other field of the record too
    assert "backtrace (4 lines, innermost call last):" in lines
    assert "    return prices['missing']" in lines[-2]
    assert lines[-1] == "  KeyError: 'missing'"


def test_dead_show_json_decodes_the_backtrace(run: Run, redis_client: redis.Redis,
                                              keys: KeySchema) -> None:
    raw = failed(compress_backtrace(TRACE), args=[{"sku": "a" * 60, "qty": 12345678}])
    jid = json.loads(raw)["jid"]
    redis_client.zadd(keys.dead, {raw: 1735722100.0})

    data = json.loads(run("dead", "show", jid, "--json").output)
    long_args = run("dead", "show", jid)

    assert data["set"] == "dead" and data["jid"] == jid
    assert data["at"] == "2025-01-01T09:01:40.000Z"
    assert data["job"]["error_backtrace"] == TRACE
    assert data["job"]["tenant"] == "acme"
    assert "died at" in long_args.output
    assert "args           [" in long_args.output.splitlines()  # long: one value per line
    assert '                   "qty": 12345678' in long_args.output.splitlines()


def test_show_without_a_backtrace_and_an_unknown_jid(run: Run, redis_client: redis.Redis,
                                                     keys: KeySchema) -> None:
    raw = dumps({"class": "Work", "args": [], "queue": "default", "jid": new_jid(),
                 "error_class": "ValueError", "error_message": "x", "retry_count": 1})
    redis_client.zadd(keys.dead, {raw: 1.0})

    shown = run("dead", "show", json.loads(raw)["jid"])
    unknown = run("retry", "show", "0" * 24)

    assert shown.exit_code == 0 and "backtrace" not in shown.output
    assert unknown.exit_code == 1
    assert "no job with jid '000000000000000000000000' in the retry set" in unknown.output
    assert "`cogworker retry list` shows them" in unknown.output


def test_scheduled_list_show_and_delete(run: Run, redis_client: redis.Redis,
                                        keys: KeySchema) -> None:
    raws = [dumps({"class": "Later", "args": [n], "queue": "default", "jid": new_jid()})
            for n in range(3)]
    redis_client.zadd(keys.schedule, {raw: time.time() + 60 * (n + 1)
                                      for n, raw in enumerate(raws)})
    jids = [json.loads(raw)["jid"] for raw in raws]

    listed = run("scheduled", "list")
    shown = run("scheduled", "show", jids[0])
    one = run("scheduled", "delete", jids[0])
    refused = run("scheduled", "delete", "--all")
    rest = run("scheduled", "delete", "--all", "--yes", "--json")

    assert [line.split()[0] for line in listed.output.splitlines()[1:4]] == jids
    assert "runs at" in shown.output and "retry count" not in shown.output
    assert "deleted 1 job from the schedule set" in one.output
    assert refused.exit_code == 2 and "pass --yes" in refused.output
    assert json.loads(rest.output) == {"deleted": 2}
    assert redis_client.zcard(keys.schedule) == 0


def push(client: redis.Redis, keys: KeySchema, queue: str, count: int) -> list[str]:
    """``count`` jobs pushed in order; returns their jids (the first one runs first)."""
    client.sadd(keys.queues, queue)
    jids = []
    for n in range(count):
        jid = new_jid()
        client.lpush(keys.queue(queue), dumps({"class": "Work", "args": [n], "queue": queue,
                                               "jid": jid, "enqueued_at": time.time()}))
        jids.append(jid)
    return jids


def test_queues_show_pages_in_fetch_order(run: Run, redis_client: redis.Redis,
                                          keys: KeySchema) -> None:
    jids = push(redis_client, keys, "mail", 5)

    first = run("queues", "show", "mail", "--per-page", "2")
    last = run("queues", "show", "mail", "--per-page", "2", "--page", "3")
    data = json.loads(run("queues", "show", "mail", "--per-page", "2", "--page", "2",
                          "--json").output)

    assert first.output.splitlines()[0] == "queue mail: 5 jobs, page 1 of 3"
    assert [line.split()[1] for line in first.output.splitlines()[2:4]] == jids[:2]
    assert "next: cogworker queues show mail --page 2" in first.output
    assert [line.split()[1] for line in last.output.splitlines()[2:]] == jids[4:]
    assert [job["jid"] for job in data["jobs"]] == jids[2:4]
    assert data["size"] == 5 and data["page"] == 2
    assert run("queues", "show", "nosuch").exit_code == 1


def test_queues_clear_pause_and_resume(run: Run, redis_client: redis.Redis,
                                       keys: KeySchema) -> None:
    push(redis_client, keys, "mail", 3)

    refused = run("queues", "clear", "mail")
    paused = run("queues", "pause", "mail")
    listed = run("queues")  # the bare group still lists
    typo = run("queues", "pause", "mial")
    cleared = run("queues", "clear", "mail", "--yes")
    resumed = run("queues", "resume", "mail")

    assert refused.exit_code == 2 and "Delete all 3 jobs waiting on queue 'mail'" in (
        refused.output)
    assert paused.output.strip() == "paused queue mail"
    assert "paused" in listed.output.splitlines()[1]
    assert "no queue named 'mial' is known yet" in typo.stderr
    assert cleared.output.strip() == "deleted 3 jobs from queue mail"
    assert resumed.output.strip() == "resumed queue mail"
    assert redis_client.llen(keys.queue("mail")) == 0
    assert redis_client.smembers(keys.paused_queues) == {b"mial"}
    assert json.loads(run("queues", "list", "--json").output)[0]["name"] == "mail"
