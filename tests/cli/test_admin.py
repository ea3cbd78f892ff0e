"""``cogworker stats|queues|retry|dead|ctl`` through click, against the test Redis."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner

from cogworker.cli import cli, common
from cogworker.core.payload import dumps, new_jid, unparseable_wrapper
from cogworker.redis.keys import KeySchema
from helpers.cli import Run, command_runner


@pytest.fixture
def run(redis_url: str, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run("stats", "--json")``: the command with this test's Redis and namespace."""
    return command_runner(cli, redis_url, namespace, tmp_path, monkeypatch)


def job(queue: str = "default", **fields: object) -> str:
    return dumps({"class": "Work", "args": [1], "queue": queue, "jid": new_jid(),
                  "created_at": time.time(), **fields})


def jid_of(raw: str) -> str:
    return str(json.loads(raw)["jid"])


def test_stats(run: Run, redis_client: redis.Redis, keys: KeySchema) -> None:
    redis_client.set(keys.stats_processed, 7)
    redis_client.sadd(keys.queues, "default")
    redis_client.lpush(keys.queue("default"), job(), job())
    redis_client.zadd(keys.dead, {job(): 1.0})

    text = run("stats")
    data = run("stats", "--json")

    assert text.exit_code == 0
    assert "processed  7" in text.output
    assert json.loads(data.output) == {"processed": 7, "failed": 0, "enqueued": 2,
                                       "scheduled": 0, "retry": 0, "dead": 1,
                                       "processes": 0, "busy": 0}


def test_queues(run: Run, redis_client: redis.Redis, keys: KeySchema) -> None:
    assert "no queues yet" in run("queues").output
    redis_client.sadd(keys.queues, "default", "mail")
    redis_client.lpush(keys.queue("mail"), job("mail"))
    redis_client.sadd(keys.paused_queues, "mail")

    text = run("queues").output
    data = json.loads(run("queues", "--json").output)

    assert text.splitlines()[0].split() == ["QUEUE", "SIZE", "LATENCY", "STATE"]
    assert text.splitlines()[2].split()[:2] == ["mail", "1"]
    assert "paused" in text.splitlines()[2]
    assert [(q["name"], q["size"], q["paused"]) for q in data] == [
        ("default", 0, False), ("mail", 1, True)]


def test_retry_list_shows_due_first_with_limit(run: Run, redis_client: redis.Redis,
                                               keys: KeySchema) -> None:
    raws = [job(error_class="KeyError", error_message="boom", retry_count=n) for n in range(3)]
    redis_client.zadd(keys.retry, {raw: time.time() + 60 * n for n, raw in enumerate(raws)})

    text = run("retry", "list", "--limit", "2").output
    data = json.loads(run("retry", "list", "--json").output)

    assert jid_of(raws[0]) in text
    assert jid_of(raws[2]) not in text
    assert "KeyError: boom" in text
    assert "showing 2 of 3" in text
    assert [entry["jid"] for entry in data] == [jid_of(raw) for raw in raws]
    assert data[1]["retry_count"] == 1


def test_retry_one_and_all(run: Run, redis_client: redis.Redis, keys: KeySchema) -> None:
    first, second, third = job(), job(), job("mail")
    redis_client.zadd(keys.retry, {first: 1.0, second: 2.0, third: 3.0})

    one = run("retry", "retry", jid_of(first))
    rest = run("retry", "retry", "--all", "--json")

    assert one.exit_code == 0
    assert "moved 1 job from the retry set" in one.output
    assert json.loads(rest.output) == {"moved": 2}
    assert redis_client.zcard(keys.retry) == 0
    assert redis_client.llen(keys.queue("default")) == 2
    assert redis_client.llen(keys.queue("mail")) == 1


def test_delete_one_and_all(run: Run, redis_client: redis.Redis, keys: KeySchema) -> None:
    raws = [job() for _ in range(3)]
    redis_client.zadd(keys.dead, {raw: float(n) for n, raw in enumerate(raws)})

    one = run("dead", "delete", jid_of(raws[0]))
    refused = run("dead", "delete", "--all")  # no terminal to ask, and no --yes
    rest = run("dead", "delete", "--all", "--yes")

    assert "deleted 1 job from the dead set" in one.output
    assert refused.exit_code == 2
    assert "Delete all 2 entries of the dead set: not confirmed" in refused.output
    assert "pass --yes" in refused.output
    assert "deleted 2 jobs from the dead set" in rest.output
    assert redis_client.exists(keys.dead) == 0
    assert "the dead set is empty" in run("dead", "list").output


@pytest.mark.parametrize(("answer", "deleted"), [("y\n", True), ("n\n", False)])
def test_a_bulk_delete_asks_on_a_terminal(run: Run, redis_client: redis.Redis, keys: KeySchema,
                                          monkeypatch: pytest.MonkeyPatch, answer: str,
                                          deleted: bool) -> None:
    redis_client.zadd(keys.retry, {job(): 1.0})
    monkeypatch.setattr(common, "stdin_is_interactive", lambda: True)

    result = run("retry", "delete", "--all", input=answer)

    assert "Delete all 1 entry of the retry set? [y/N]" in result.output
    assert result.exit_code == (0 if deleted else 1)
    assert redis_client.zcard(keys.retry) == (0 if deleted else 1)


def test_unknown_jid_exits_1(run: Run) -> None:
    result = run("dead", "retry", "0" * 24)

    assert result.exit_code == 1
    assert "no job with jid '000000000000000000000000' in the dead set" in result.output
    assert "cogworker dead list" in result.output


def test_an_unparseable_entry_cannot_be_retried(run: Run, redis_client: redis.Redis,
                                                keys: KeySchema) -> None:
    wrapper = dumps(unparseable_wrapper(b"junk", None, "not JSON", now=1.0))
    redis_client.zadd(keys.dead, {wrapper: 1.0})

    result = run("dead", "retry", jid_of(wrapper))

    assert result.exit_code == 1
    assert "cannot be put back on a queue; delete it instead" in result.output
    assert redis_client.zcard(keys.dead) == 1


@pytest.mark.parametrize(("args", "message"), [
    (("retry", "retry"), "retry retry: missing argument JID: give JID (one target) or --all; "
                         "neither was given"),
    (("dead", "delete", "abc", "--all"), "dead delete: give either JID or --all, not both"),
    (("ctl", "quiet"), "ctl quiet: missing argument IDENTITY: give IDENTITY (one target) or "
                       "--all; neither was given"),
    (("ctl", "stop", "x", "--all"), "ctl stop: give either IDENTITY or --all, not both"),
    (("retry", "list", "--limit", "0"), "--limit"),
])
def test_usage_errors_exit_2_and_say_what_is_missing(run: Run, args: tuple[str, ...],
                                                      message: str) -> None:
    result = run(*args)

    assert result.exit_code == 2
    assert message in result.output


def beat(client: redis.Redis, keys: KeySchema, identity: str) -> None:
    info = {"hostname": "box", "pid": 1, "concurrency": 3, "queues": ["default"]}
    client.hset(keys.process(identity), mapping={"info": dumps(info), "busy": 1,
                                                  "quiet": "false"})
    client.sadd(keys.processes, identity)


def test_ctl_list(run: Run, redis_client: redis.Redis, keys: KeySchema) -> None:
    beat(redis_client, keys, "box:1:abc")

    text = run("ctl", "list").output
    data = json.loads(run("ctl", "list", "--json").output)

    assert "box:1:abc" in text
    assert "1/3" in text
    assert data[0]["identity"] == "box:1:abc"


def test_ctl_signals_a_listening_process(run: Run, redis_client: redis.Redis,
                                         keys: KeySchema) -> None:
    beat(redis_client, keys, "box:1:abc")
    beat(redis_client, keys, "box:2:def")
    pubsub = redis_client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call, unused-ignore]
    pubsub.subscribe(keys.signal("box:1:abc"))
    pubsub.get_message(timeout=5)

    one = run("ctl", "quiet", "box:1:abc")
    every = run("ctl", "stop", "--all", "--json")
    again = run("ctl", "resume", "--all")
    pubsub.close()

    assert one.exit_code == 0
    assert "sent quiet to 1 process" in one.output
    assert json.loads(every.stdout) == {"signal": "stop", "signalled": 1,
                                        "processes": ["box:1:abc"],
                                        "not_listening": ["box:2:def"], "pending": []}
    # Nothing here reports the new state (a real worker does at once): it says so.
    assert "box:1:abc got quiet but has not reported it yet (pending)" in one.stderr
    assert "sent resume to 1 process" in again.stdout
    assert "box:2:def is alive but was not listening" in again.stderr


def test_ctl_unknown_identity_exits_1(run: Run) -> None:
    result = run("ctl", "resume", "nobody:1:000")

    assert result.exit_code == 1
    assert "no live process with identity 'nobody:1:000'" in result.output
    assert "cogworker ctl list" in result.output


def test_an_unreachable_redis_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(cli, ["stats", "--redis-url", "redis://127.0.0.1:1/0"])

    assert result.exit_code == 1
    assert "Redis" in result.output
