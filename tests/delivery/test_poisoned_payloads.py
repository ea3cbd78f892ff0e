"""Poisoned payloads: nested past the recursion limit, not UTF-8, malformed but parseable.
None of them stops recovery, runs a job, or gets stuck where the CLI cannot remove it; each
is buried in dead with its exact bytes (DESIGN §3, "bad input never kills a loop")."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner, Result

import cogworker
from cogworker.cli import cli
from cogworker.core.errors import JobArgumentError
from cogworker.core.payload import new_jid
from cogworker.redis.keys import KeySchema
from delivery.conftest import APP_HEADER, StartAppWorker
from delivery.support import assert_drained, identity_of
from helpers.workers import Ledger, wait_until
from runtime.support import payload, push_raw, sorted_set_jobs

pytestmark = pytest.mark.slow

JOBS = APP_HEADER + '''

@app.job(name="Work")
def work(tag):
    record(tag, "Work", "ran")


@app.job(name="Pair")
def pair(first, second):
    record(repr([first, second]), "Pair", "ran")


@app.job(name="Hold")
def hold(tag):
    """Runs until the file $TEST_DIR/gate exists."""
    record(tag, "Hold", "start")
    while not os.path.exists(os.path.join(os.environ["TEST_DIR"], "gate")):
        time.sleep(0.02)
    record(tag, "Hold", "finish")
'''

DEEP = b"[" * 100_000 + b"]" * 100_000
"""A JSON array nested 100,000 levels: json.loads raises RecursionError on it."""


def kept_bytes(entry: dict[str, Any]) -> bytes:
    """The bytes a dead unparseable wrapper keeps (base64 when they are not UTF-8)."""
    if "raw_payload_base64" in entry:
        return base64.b64decode(entry["raw_payload_base64"])
    return str(entry["raw_payload"]).encode()


def work(tag: str) -> str:
    return payload("Work", [tag], "default", new_jid())


def dead_entries(client: redis.Redis, keys: KeySchema) -> list[dict[str, Any]]:
    return [entry for entry, _ in sorted_set_jobs(client, keys.dead)]


def ghost(client: redis.Redis, keys: KeySchema, identity: str, *raws: str | bytes) -> None:
    """The in-progress list of a process that died long ago (no presence, no last beat),
    registered as orphan recovery finds it; the last raw given is its head."""
    client.sadd(keys.inprogress_identities, identity)
    client.lpush(keys.inprogress(identity), *raws)


@pytest.fixture
def command(redis_url: str, namespace: str, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``command("dead", "list")``: the CLI, in this process, on this test's namespace."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(cli, [*args, "--redis-url", redis_url, "--namespace", namespace],
                             catch_exceptions=False)

    return run


def test_a_payload_nested_past_the_recursion_limit_never_stops_recovery(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker,
) -> None:
    # Recovery walks the identities in order and each list head first: the poisoned entry
    # is the first thing the first pass meets.
    ghost(redis_client, keys, "a-ghost:1:aaaaaaaaaaaa", work("a1"), DEEP)
    ghost(redis_client, keys, "b-ghost:2:bbbbbbbbbbbb", work("b1"), work("b2"))
    push_raw(redis_client, keys, "default", DEEP, work("q1"))  # oldest first: DEEP, then q1

    worker = app_worker(JOBS, redis_url, "-c", "2")
    wanted = {"a1", "b1", "b2", "q1"}
    wait_until(lambda: {event.jid for event in ledger.events("ran")} == wanted, 30,
               lambda: worker.output()[-3000:])
    wait_until(lambda: redis_client.zcard(keys.dead) == 2, 10, lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    assert sorted(event.jid for event in ledger.events("ran")) == sorted(wanted)
    buried = dead_entries(redis_client, keys)
    assert [kept_bytes(entry) for entry in buried] == [DEEP, DEEP]
    assert {entry["class"] for entry in buried} == {"(unparseable)"}
    assert all("RecursionError" in entry["error_message"] for entry in buried)
    log = worker.output()
    assert "orphan recovery: RecursionError" not in log
    assert log.count("left in progress by dead process") == 2
    assert_drained(redis_client, keys, dead=2)


def test_shutdown_requeues_its_jobs_past_a_deep_entry_on_its_own_list(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    worker = app_worker(JOBS, redis_url, "-c", "1", timeout=0.5)
    identity = identity_of(worker)
    held = payload("Hold", ["h1"], "default", new_jid())
    push_raw(redis_client, keys, "default", held)
    wait_until(lambda: ledger.count("start") == 1, 20, lambda: worker.output()[-3000:])
    redis_client.lpush(keys.inprogress(identity), DEEP)  # as a fetch that ran unseen would

    assert worker.stop() == 0  # the job outlives the 0.5 s timeout: both are requeued
    assert redis_client.llen(keys.inprogress(identity)) == 0
    assert sorted(redis_client.lrange(keys.queue("default"), 0, -1)) == sorted(
        [held.encode(), DEEP])
    assert "requeueing unfinished jobs at shutdown failed" not in worker.output()
    gate.touch()


def test_malformed_payloads_are_buried_with_their_bytes_and_the_cli_removes_them(
    redis_url: str, redis_client: redis.Redis, keys: KeySchema, ledger: Ledger,
    app_worker: StartAppWorker, command: Callable[..., Result],
) -> None:
    bad: dict[bytes, str] = {
        json.dumps({"queue": "default", "args": [], "jid": new_jid()}).encode():
            "'class' must be a non-empty string",
        payload("Pair", [], "default", new_jid()).replace("[]", '"xy"').encode():
            "'args' must be a list",
        payload("Pair", [1, 2], "default", "j").replace('"j"', "7").encode():
            "'jid' must be a non-empty string",
        payload("Pair", [1, 2], "default", new_jid()).replace("[1, 2]", "[NaN, 2]").encode():
            "NaN is not a JSON number",
        # bytes that are not UTF-8 inside a JSON string
        payload("Pair", ["\x00", 2], "default", new_jid()).encode().replace(b"\\u0000", b"\xff"):
            "not UTF-8",
        payload("Pair", ["\x00", 2], "default", new_jid()).replace("\\u0000", "\\ud800").encode():
            "lone surrogate",
        payload("Pair", [1, 2], "default", new_jid()).encode() + b"x" * 100_001: "not JSON",
    }
    push_raw(redis_client, keys, "default", *bad, work("after"))
    worker = app_worker(JOBS, redis_url, "-c", "1")
    wait_until(lambda: ledger.count("ran") == 1 and redis_client.zcard(keys.dead) == len(bad),
               20, lambda: worker.output()[-3000:])
    assert worker.stop() == 0

    assert [event.jid for event in ledger.events("ran")] == ["after"]  # no Pair ever ran
    assert redis_client.zcard(keys.retry) == 0
    buried = {kept_bytes(entry): entry for entry in dead_entries(redis_client, keys)}
    assert set(buried) == set(bad)  # the exact bytes, also past 100,000 characters
    for raw, reason in bad.items():
        assert buried[raw]["class"] == "(unparseable)"
        assert reason in buried[raw]["error_message"], buried[raw]
        assert ("raw_payload_base64" in buried[raw]) == (b"\xff" in raw)

    listed = json.loads(command("dead", "list", "--json").stdout)
    assert len(listed) == len(bad)
    for entry in listed:
        deleted = command("dead", "delete", entry["jid"])
        assert (deleted.exit_code, deleted.stdout) == (0, "deleted 1 job from the dead set\n")
    assert_drained(redis_client, keys)


def test_a_dead_record_that_is_not_utf8_can_be_deleted_and_is_never_requeued(
    redis_client: redis.Redis, keys: KeySchema, command: Callable[..., Result],
) -> None:
    # What an older version stored for a job whose argument held a byte that is not UTF-8.
    jid = new_jid()
    record = payload("Pair", ["\x00", 2], "default", jid, error_class="KeyError",
                     retry_count=1).encode().replace(b"\\u0000", b"\xff")
    redis_client.zadd(keys.dead, {record: 1.0})

    listed = json.loads(command("dead", "list", "--json").stdout)
    assert [entry["jid"] for entry in listed] == [jid]
    refused = command("dead", "retry", jid)
    assert refused.exit_code != 0
    assert "not UTF-8" in refused.output and "delete it instead" in refused.output
    assert redis_client.llen(keys.queue("default")) == 0
    deleted = command("dead", "delete", jid)
    assert (deleted.exit_code, deleted.stdout) == (0, "deleted 1 job from the dead set\n")
    assert redis_client.zcard(keys.dead) == 0


def test_enqueue_refuses_arguments_no_worker_could_read(
    redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    app = cogworker.App(redis_url=redis_url, namespace=namespace)
    try:
        job = app.job(name="Work")(lambda value: None)
        deep: list[Any] = []
        for _ in range(100_000):
            deep = [deep]
        fits: list[Any] = []
        for _ in range(97):  # 98 levels with its own: the most an argument may nest
            fits = [fits]
        for value, words in ((deep, "nests lists and dicts deeper"),
                             ("caf\udce9", "lone surrogate"),
                             ({"k\ud800": 1}, "lone surrogate")):
            with pytest.raises(JobArgumentError, match=words) as info:
                job.perform_async(value)
            assert "argument #1" in str(info.value)
        assert redis_client.llen(keys.queue("default")) == 0
        assert job.perform_async(fits) is not None
        assert redis_client.llen(keys.queue("default")) == 1
    finally:
        app.close()
