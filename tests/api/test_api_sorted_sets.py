"""Schedule, retry and dead sets: list, find, retry now (atomic), delete, retry all, clear."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
import redis

from cogworker.api import DeadSet, RetrySet, ScheduledSet, SortedEntry
from cogworker.core.errors import PayloadError
from cogworker.core.payload import dumps, unparseable_wrapper
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema

MakeJob = Callable[..., str]


def jid_of(raw: str) -> str:
    return str(json.loads(raw)["jid"])


def queue_items(client: redis.Redis, keys: KeySchema, queue: str) -> list[dict[str, object]]:
    return [json.loads(raw) for raw in client.lrange(keys.queue(queue), 0, -1)]


def test_entries_newest_first_or_by_score_with_limit(broker: RedisBroker,
                                                     redis_client: redis.Redis,
                                                     keys: KeySchema,
                                                     make_job: MakeJob) -> None:
    raws = [make_job(args=[n]) for n in range(70)]
    redis_client.zadd(keys.dead, {raw: 1000.0 + n for n, raw in enumerate(raws)})
    dead = DeadSet(broker)

    assert dead.size() == 70
    assert [entry.value for entry in dead] == raws[::-1]
    assert [entry.value for entry in dead.entries(newest_first=False, limit=55)] == raws[:55]
    first = next(iter(dead))
    assert (first.score, first.at.year, first.args) == (1069.0, 1970, [69])


def test_entry_fields(broker: RedisBroker, redis_client: redis.Redis, keys: KeySchema,
                      make_job: MakeJob) -> None:
    raw = make_job("mail", retry_count=3, error_class="KeyError", error_message="'x'")
    redis_client.zadd(keys.retry, {raw: 1_700_000_000.0})

    entry = RetrySet(broker).find(jid_of(raw))

    assert entry is not None
    assert (entry.klass, entry.queue, entry.retry_count) == ("Work", "mail", 3)
    assert (entry.error_class, entry.error_message) == ("KeyError", "'x'")
    assert entry.at.isoformat() == "2023-11-14T22:13:20+00:00"
    assert entry.to_dict()["at"] == "2023-11-14T22:13:20+00:00"


def test_find_returns_none_for_an_unknown_jid(broker: RedisBroker, redis_client: redis.Redis,
                                              keys: KeySchema, make_job: MakeJob) -> None:
    redis_client.zadd(keys.retry, {make_job(): 1.0})

    assert RetrySet(broker).find("0" * 24) is None
    assert RetrySet(broker).find("[*?]") is None  # glob characters are matched literally


def test_find_by_stand_in_jid_of_an_unparseable_entry(broker: RedisBroker,
                                                      redis_client: redis.Redis,
                                                      keys: KeySchema) -> None:
    redis_client.zadd(keys.schedule, {"[1, 2": 5.0})
    (listed,) = list(ScheduledSet(broker))

    found = ScheduledSet(broker).find(listed.jid)

    assert found == listed
    assert found is not None
    assert found.delete() is True
    assert ScheduledSet(broker).size() == 0


def test_retry_now_moves_the_job_with_enqueued_at_restamped(broker: RedisBroker,
                                                            redis_client: redis.Redis,
                                                            keys: KeySchema,
                                                            make_job: MakeJob) -> None:
    raw = make_job("mail", enqueued_at=1.0, retry_count=2)
    redis_client.zadd(keys.retry, {raw: time.time() + 3600})
    entry = RetrySet(broker).find(jid_of(raw))
    assert entry is not None
    before = time.time()

    assert entry.retry_now() is True

    assert RetrySet(broker).size() == 0
    (moved,) = queue_items(redis_client, keys, "mail")
    assert moved["jid"] == jid_of(raw)
    assert moved["retry_count"] == 2
    assert isinstance(moved["enqueued_at"], float)
    assert moved["enqueued_at"] >= before
    assert redis_client.sismember(keys.queues, "mail")


def test_a_dead_job_can_be_retried(broker: RedisBroker, redis_client: redis.Redis,
                                   keys: KeySchema, make_job: MakeJob) -> None:
    raw = make_job()
    redis_client.zadd(keys.dead, {raw: 1.0})
    entry = DeadSet(broker).find(jid_of(raw))

    assert entry is not None
    assert entry.retry_now() is True
    assert [item["jid"] for item in queue_items(redis_client, keys, "default")] == [jid_of(raw)]


def test_two_retries_of_the_same_entry_enqueue_it_once(broker: RedisBroker,
                                                       redis_client: redis.Redis,
                                                       keys: KeySchema,
                                                       make_job: MakeJob) -> None:
    raw = make_job()
    redis_client.zadd(keys.retry, {raw: 1.0})
    first, second = RetrySet(broker).find(jid_of(raw)), RetrySet(broker).find(jid_of(raw))
    assert first is not None
    assert second is not None

    assert (first.retry_now(), second.retry_now()) == (True, False)
    assert redis_client.llen(keys.queue("default")) == 1


def test_an_unparseable_burial_cannot_be_retried(broker: RedisBroker,
                                                 redis_client: redis.Redis,
                                                 keys: KeySchema) -> None:
    wrapper = dumps(unparseable_wrapper(b"garbage", None, "not JSON", now=1.0))
    redis_client.zadd(keys.dead, {wrapper: 1.0, "not json at all": 2.0})
    dead = DeadSet(broker)

    for entry in dead:
        with pytest.raises(PayloadError, match="cannot be put back on a queue; delete it"):
            entry.retry_now()

    assert dead.size() == 2
    assert dead.retry_all() == 0
    assert dead.size() == 2


def test_delete_removes_the_entry_and_its_failure_trail(broker: RedisBroker,
                                                        redis_client: redis.Redis,
                                                        keys: KeySchema,
                                                        make_job: MakeJob) -> None:
    raw, other = make_job(), make_job()
    redis_client.zadd(keys.retry, {raw: 1.0, other: 2.0})
    redis_client.rpush(keys.job_attempts(jid_of(raw)), "{}")
    redis_client.rpush(keys.job_attempts(jid_of(other)), "{}")
    retry = RetrySet(broker)

    assert retry.delete(jid_of(raw)) == 1
    assert retry.delete(jid_of(raw)) == 0

    assert [entry.value for entry in retry] == [other]
    assert redis_client.exists(keys.job_attempts(jid_of(raw))) == 0
    assert redis_client.exists(keys.job_attempts(jid_of(other))) == 1


def test_a_detached_entry_refuses_actions(make_job: MakeJob) -> None:
    raw = make_job()
    entry = SortedEntry(raw, json.loads(raw), 1.0)

    with pytest.raises(ValueError, match="not attached"):
        entry.delete()


def test_retry_all_moves_every_job_even_with_equal_scores(broker: RedisBroker,
                                                          redis_client: redis.Redis,
                                                          keys: KeySchema,
                                                          make_job: MakeJob) -> None:
    raws = [make_job("a" if n % 2 else "b") for n in range(130)]
    # Many equal scores: the score cursor must still visit each entry exactly once.
    redis_client.zadd(keys.retry, {raw: float(n // 60) for n, raw in enumerate(raws)})
    redis_client.zadd(keys.retry, {"junk": 0.5})

    assert RetrySet(broker).retry_all() == 130

    assert [entry.value for entry in RetrySet(broker)] == ["junk"]
    moved = queue_items(redis_client, keys, "a") + queue_items(redis_client, keys, "b")
    assert sorted(str(item["jid"]) for item in moved) == sorted(jid_of(raw) for raw in raws)


def test_retry_all_of_one_queue(broker: RedisBroker, redis_client: redis.Redis,
                                keys: KeySchema, make_job: MakeJob) -> None:
    redis_client.zadd(keys.retry, {make_job("a"): 1.0, make_job("b"): 2.0})

    assert RetrySet(broker).retry_all(queue="a") == 1

    assert [entry.queue for entry in RetrySet(broker)] == ["b"]


def test_clear_deletes_everything_and_the_failure_trails(broker: RedisBroker,
                                                         redis_client: redis.Redis,
                                                         keys: KeySchema,
                                                         make_job: MakeJob) -> None:
    raws = [make_job() for _ in range(3)]
    redis_client.zadd(keys.dead, {raw: float(n) for n, raw in enumerate(raws)})
    for raw in raws:
        redis_client.rpush(keys.job_attempts(jid_of(raw)), "{}")

    assert DeadSet(broker).clear() == 3

    assert redis_client.exists(keys.dead) == 0
    assert redis_client.exists(*(keys.job_attempts(jid_of(raw)) for raw in raws)) == 0
    assert DeadSet(broker).clear() == 0


def test_deleting_a_scheduled_job_keeps_its_attempts(broker: RedisBroker,
                                                     redis_client: redis.Redis,
                                                     keys: KeySchema,
                                                     make_job: MakeJob) -> None:
    raw = make_job()
    redis_client.zadd(keys.schedule, {raw: 1.0})
    redis_client.rpush(keys.job_attempts(jid_of(raw)), "{}")

    assert ScheduledSet(broker).delete(jid_of(raw)) == 1
    assert redis_client.exists(keys.job_attempts(jid_of(raw))) == 1


def test_find_a_custom_jid_with_json_escaped_characters(broker: RedisBroker,
                                                        redis_client: redis.Redis,
                                                        keys: KeySchema,
                                                        make_job: MakeJob) -> None:
    raw = make_job(jid='my "odd" jid*')
    redis_client.zadd(keys.retry, {raw: 1.0, make_job(jid="my other jid"): 2.0})

    found = RetrySet(broker).find('my "odd" jid*')

    assert found is not None
    assert found.value == raw


def test_retry_all_skips_an_entry_whose_move_fails(broker: RedisBroker,
                                                   redis_client: redis.Redis,
                                                   keys: KeySchema, make_job: MakeJob,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    redis_client.set(keys.queue("broken"), "a string, not a list")
    stuck, fine = make_job("broken"), make_job("default")
    redis_client.zadd(keys.retry, {stuck: 1.0, fine: 2.0})

    assert RetrySet(broker).retry_all() == 1

    assert [entry.value for entry in RetrySet(broker)] == [stuck]
    assert redis_client.llen(keys.queue("default")) == 1
    assert f"could not move {jid_of(stuck)}" in caplog.text
