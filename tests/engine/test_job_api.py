"""The public job API against a real Redis: what perform_* store, and the errors."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import cogworker
from cogworker.core.middleware import PushContext
from cogworker.redis.keys import KeySchema


@pytest.fixture
def app(redis_url: str, namespace: str, redis_client: redis.Redis) -> Iterator[cogworker.App]:
    application = cogworker.App(redis_url=redis_url, namespace=namespace)
    yield application
    application.close()


def queued(client: redis.Redis, keys: KeySchema, queue: str = "default") -> list[dict[str, Any]]:
    """Jobs on a queue, oldest first (the order they will be fetched in)."""
    return [json.loads(raw) for raw in reversed(client.lrange(keys.queue(queue), 0, -1))]


def test_perform_async_stores_the_original_payload(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app.declare_job_options("lock_run")  # a custom option, as a middleware would read

    @app.job(queue="mail", retry=5, lock_run=True)
    def send(user_id: int, text: str) -> None: ...

    before = time.time()
    jid = send.perform_async(7, "héllo")
    (job,) = queued(redis_client, keys, "mail")
    assert jid is not None and len(jid) == 24 and int(jid, 16) >= 0
    assert job["jid"] == jid
    assert job["class"].endswith(".test_perform_async_stores_the_original_payload.<locals>.send")
    assert job["args"] == [7, "héllo"]
    assert job["queue"] == "mail" and job["retry"] == 5 and job["lock_run"] is True
    assert before <= job["created_at"] <= job["enqueued_at"] <= time.time()
    assert "at" not in job
    assert redis_client.smembers(keys.queues) == {b"mail"}
    raw = redis_client.lindex(keys.queue("mail"), 0)
    assert raw is not None and "héllo".encode() in raw  # UTF-8 kept, not \u-escaped
    assert b", " not in raw  # compact JSON


def test_the_function_stays_callable(app: cogworker.App) -> None:
    @app.job
    def add(a: int, b: int) -> int:
        return a + b

    assert add(2, 3) == 5
    assert add.name.endswith(".add")


def test_name_sets_the_stored_class(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(name="HardWorker")
    def hard(x: int) -> None: ...

    hard.perform_async(1)
    assert queued(redis_client, keys)[0]["class"] == "HardWorker"
    assert app.registry.resolve("HardWorker").target is hard.func


def test_fifo_order(app: cogworker.App, redis_client: redis.Redis, keys: KeySchema) -> None:
    @app.job
    def step(n: int) -> None: ...

    for n in range(5):
        step.perform_async(n)
    assert [job["args"][0] for job in queued(redis_client, keys)] == [0, 1, 2, 3, 4]


def test_class_jobs_inherit_options(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app.declare_job_options("team")

    class Base(cogworker.Job):
        queue = "reports"
        retry = 3
        options = {"team": "billing"}

        def perform(self, *args: Any) -> None: ...

    @app.job
    class Monthly(Base):
        retry = 1

        def perform(self, month: str) -> None: ...

    Monthly.perform_async("2026-11")
    (job,) = queued(redis_client, keys, "reports")
    assert job["retry"] == 1 and job["team"] == "billing" and job["args"] == ["2026-11"]
    assert job["class"].endswith("Monthly")


def test_unregistered_class_job_says_how_to_register(app: cogworker.App) -> None:
    class Loose(cogworker.Job):
        def perform(self) -> None: ...

    with pytest.raises(cogworker.JobDefinitionError, match=r"decorate it with @app\.job"):
        Loose.perform_async()


def test_perform_in_and_at_go_to_the_schedule(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job
    def later(n: int) -> None: ...

    now = time.time()
    later.perform_in(30, 1)
    later.perform_in(dt.timedelta(minutes=2), 2)
    later.perform_at(dt.datetime.fromtimestamp(now + 600, tz=dt.timezone.utc), 3)
    later.perform_at(now + 900, 4)
    entries: list[tuple[bytes, float]] = redis_client.zrange(  # type: ignore[assignment]
        keys.schedule, 0, -1, withscores=True)
    by_arg = {json.loads(raw)["args"][0]: (json.loads(raw), score) for raw, score in entries}
    for arg, offset in ((1, 30), (2, 120), (3, 600), (4, 900)):
        job, score = by_arg[arg]
        assert job["at"] == score
        assert now + offset - 1 <= score <= time.time() + offset + 1
        assert "enqueued_at" not in job
    assert redis_client.llen(keys.queue("default")) == 0


def test_set_overrides_one_call(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(queue="a")
    def work(n: int) -> None: ...

    work.set(queue="b", retry=False).perform_async(1)
    work.perform_async(2)
    assert queued(redis_client, keys, "b")[0]["retry"] is False
    assert queued(redis_client, keys, "a")[0]["args"] == [2]


@pytest.mark.parametrize(
    ("bad", "kind", "hint"),
    [
        (dt.datetime(2026, 1, 1), "datetime", "isoformat"),
        ({1, 2}, "set", "list"),
        (object(), "object", "convert"),
        (float("nan"), "float", "NaN"),
        ((1, 2), "tuple", "list"),
        (b"x", "bytes", "decode"),
    ],
)
def test_non_json_argument_fails_at_enqueue(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema, bad: object, kind: str,
    hint: str,
) -> None:
    @app.job
    def takes(a: object, b: object) -> None: ...

    with pytest.raises(cogworker.JobArgumentError) as info:
        takes.perform_async(1, bad)
    message = str(info.value)
    assert "argument #2" in message and kind in message and hint in message
    assert redis_client.llen(keys.queue("default")) == 0


def test_nested_bad_value_is_located(app: cogworker.App) -> None:
    @app.job
    def takes(a: object) -> None: ...

    with pytest.raises(cogworker.JobArgumentError, match=r"#1\['when'\]"):
        takes.perform_async({"when": dt.date(2026, 1, 1)})
    with pytest.raises(cogworker.JobArgumentError, match="key 1"):
        takes.perform_async({1: "int keys become strings in JSON"})


def test_bad_options_fail_at_definition(app: cogworker.App) -> None:
    with pytest.raises(cogworker.JobDefinitionError, match="unique must be one of"):
        app.job(unique="forever")(lambda: None)
    with pytest.raises(cogworker.JobDefinitionError, match="retry must be"):
        app.job(retry=-1)(lambda: None)
    with pytest.raises(cogworker.JobDefinitionError, match="set by cogworker"):
        app.job(jid="x")(lambda: None)


def test_push_takes_a_raw_payload(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    jid = app.push({"class": "SomeRubyJob", "args": [1], "queue": "ruby"})
    (job,) = queued(redis_client, keys, "ruby")
    assert job["jid"] == jid and job["class"] == "SomeRubyJob" and job["retry"] is True
    with pytest.raises(cogworker.CogworkerError, match="class"):
        app.push({"args": []})


def test_push_bulk_uses_one_round_trip_per_thousand(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job(queue="bulk")
    def item(n: int) -> None: ...

    calls: list[int] = []
    queues = app.broker.queues
    original = queues.store

    def counting_store(immediate: Any, scheduled: Any) -> None:
        calls.append(len(immediate) + len(scheduled))
        original(immediate, scheduled)

    queues.store = counting_store  # type: ignore[method-assign]
    jids = app.push_bulk(item, [[n] for n in range(2500)])
    assert calls == [1000, 1000, 500]
    assert len(set(jids)) == 2500
    assert [job["args"][0] for job in queued(redis_client, keys, "bulk")] == list(range(2500))


def test_push_bulk_rejects_bad_args_before_storing_any(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    @app.job
    def item(n: object) -> None: ...

    with pytest.raises(cogworker.JobArgumentError, match="argument #1"):
        app.push_bulk(item, [[1], [2], [{3}]])
    assert redis_client.llen(keys.queue("default")) == 0


def test_client_middleware_can_change_or_stop_a_push(
    app: cogworker.App, redis_client: redis.Redis, keys: KeySchema
) -> None:
    seen: list[str] = []

    def stamp(ctx: PushContext, call_next: Any) -> Any:
        ctx.job["tenant"] = "acme"
        seen.append("outer")
        return call_next()

    def veto(ctx: PushContext, call_next: Any) -> Any:
        seen.append("inner")
        if ctx.job["args"] == ["skip"]:
            return ctx.job["jid"]  # not calling through: nothing is stored
        return call_next()

    app.client_middleware.extend([stamp, veto])

    @app.job
    def job(x: str) -> None: ...

    assert job.perform_async("keep") is not None
    assert job.perform_async("skip") is not None
    stored = queued(redis_client, keys)
    assert [j["args"] for j in stored] == [["keep"]]
    assert stored[0]["tenant"] == "acme"
    assert seen == ["outer", "inner", "outer", "inner"]
