"""ProcessSet, Process (remote signals) and WorkSet, against heartbeat-shaped records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from cogworker.api import ProcessSet, Work, WorkSet
from cogworker.core.payload import dumps
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema


def beat(client: redis.Redis, keys: KeySchema, identity: str, *, busy: int = 0,
         quiet: bool = False, **info: Any) -> None:
    """Write what a heartbeat writes for ``identity``."""
    details = {"hostname": "box", "pid": 42, "concurrency": 5, "queues": ["default", "mail"],
               "started_at": 1_700_000_000.5, "rss_kb": 2048, **info}
    client.hset(keys.process(identity), mapping={
        "info": dumps(details), "busy": busy, "quiet": "true" if quiet else "false"})
    client.expire(keys.process(identity), 60)
    client.sadd(keys.processes, identity)


def test_iterates_live_processes_and_prunes_stale_members(broker: RedisBroker,
                                                          redis_client: redis.Redis,
                                                          keys: KeySchema) -> None:
    beat(redis_client, keys, "box:42:aaa", busy=2, quiet=True)
    beat(redis_client, keys, "box:43:bbb", pid=43)
    redis_client.sadd(keys.processes, "gone:1:ccc")  # its presence hash expired

    processes = list(ProcessSet(broker))

    assert [p.identity for p in processes] == ["box:42:aaa", "box:43:bbb"]
    first = processes[0]
    assert (first.hostname, first.pid, first.concurrency, first.rss_kb) == ("box", 42, 5, 2048)
    assert (first.queues, first.started_at) == (["default", "mail"], 1_700_000_000.5)
    assert (first.busy, first.is_quiet, first["quiet"], first["pid"]) == (2, True, True, 42)
    assert processes[1].is_quiet is False
    assert redis_client.smembers(keys.processes) == {b"box:42:aaa", b"box:43:bbb"}
    assert ProcessSet(broker).size() == 2
    assert ProcessSet(broker).total_concurrency() == 10


def test_get_by_identity(broker: RedisBroker, redis_client: redis.Redis,
                         keys: KeySchema) -> None:
    beat(redis_client, keys, "box:42:aaa")

    found = ProcessSet(broker).get("box:42:aaa")

    assert found is not None
    assert found.to_dict()["identity"] == "box:42:aaa"
    assert ProcessSet(broker).get("box:1:zzz") is None


def test_unreadable_info_gives_empty_fields(broker: RedisBroker, redis_client: redis.Redis,
                                            keys: KeySchema) -> None:
    redis_client.hset(keys.process("odd"), mapping={"info": "{bad", "busy": "x"})
    redis_client.sadd(keys.processes, "odd")

    (process,) = list(ProcessSet(broker))

    assert (process.info, process.busy, process.pid, process.queues) == ({}, 0, None, [])


@pytest.fixture
def signals(redis_client: redis.Redis, keys: KeySchema) -> Iterator[redis.client.PubSub]:
    pubsub = redis_client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call, unused-ignore]
    pubsub.subscribe(keys.signal("box:42:aaa"))
    pubsub.get_message(timeout=5)  # the subscription is live once this returns
    yield pubsub
    pubsub.close()


def next_message(pubsub: redis.client.PubSub) -> bytes:
    for _ in range(50):
        message = pubsub.get_message(timeout=1)
        if message is not None:
            return bytes(message["data"])
    raise AssertionError("no message arrived")


def test_quiet_resume_stop_publish_on_the_process_channel(broker: RedisBroker,
                                                          redis_client: redis.Redis,
                                                          keys: KeySchema,
                                                          signals: redis.client.PubSub) -> None:
    beat(redis_client, keys, "box:42:aaa")
    (process,) = list(ProcessSet(broker))

    assert process.quiet() == 1
    assert next_message(signals) == b"quiet"
    assert process.resume() == 1
    assert next_message(signals) == b"resume"
    assert process.stop() == 1
    assert next_message(signals) == b"stop"


def test_workset_lists_running_jobs_of_live_processes(broker: RedisBroker,
                                                      redis_client: redis.Redis,
                                                      keys: KeySchema,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    beat(redis_client, keys, "box:42:aaa")
    job = {"class": "Work", "args": [1], "queue": "mail", "jid": "a" * 24}
    redis_client.hset(keys.workers("box:42:aaa"), mapping={
        "t1": json.dumps({"queue": "mail", "payload": job, "run_at": 1_700_000_000}),
        "t2": "not json",
    })
    redis_client.hset(keys.workers("dead:1:zzz"), "t9", json.dumps(
        {"queue": "mail", "payload": job, "run_at": 1}))  # no live process: not listed

    works = list(WorkSet(broker))

    assert works == [("box:42:aaa", "t1", Work("mail", 1_700_000_000.0, job))]
    assert "unreadable entry t2" in caplog.text
    assert WorkSet(broker).size() == 1
