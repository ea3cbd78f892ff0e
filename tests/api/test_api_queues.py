"""Queue: size, latency, iteration newest first in pages, delete, clear, pause, resume."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
import redis

from cogworker.api import Queue, QueueSummary
from cogworker.core.payload import dumps
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema

MakeJob = Callable[..., str]


def test_size_and_name(broker: RedisBroker, redis_client: redis.Redis, keys: KeySchema,
                       make_job: MakeJob) -> None:
    redis_client.lpush(keys.queue("mail"), make_job("mail"), make_job("mail"))

    queue = Queue(broker, "mail")

    assert (queue.name, queue.size()) == ("mail", 2)
    assert Queue(broker).name == "default"


def test_latency_is_the_age_of_the_next_job_to_run(broker: RedisBroker,
                                                   redis_client: redis.Redis, keys: KeySchema,
                                                   make_job: MakeJob) -> None:
    now = time.time()
    # The right end is the next to pop: the oldest job sits there.
    redis_client.rpush(keys.queue("default"), make_job(enqueued_at=now - 100),
                       make_job(enqueued_at=now - 5000))

    latency = Queue(broker).latency()

    assert 5000 <= latency < 5000 + 600


def test_latency_falls_back_to_created_at(broker: RedisBroker, redis_client: redis.Redis,
                                          keys: KeySchema, make_job: MakeJob) -> None:
    redis_client.lpush(keys.queue("default"), make_job(created_at=time.time() - 300))

    assert Queue(broker).latency() >= 300


@pytest.mark.parametrize("raw", [
    "not json",
    dumps({"class": "Work", "queue": "default"}),
    dumps({"class": "Work", "queue": "default", "enqueued_at": "yesterday"}),
    dumps({"class": "Work", "queue": "default", "enqueued_at": time.time() + 3600}),
])
def test_latency_is_zero_when_unknown_and_never_negative(broker: RedisBroker,
                                                         redis_client: redis.Redis,
                                                         keys: KeySchema, raw: str) -> None:
    redis_client.lpush(keys.queue("default"), raw)

    assert Queue(broker).latency() == 0.0


def test_latency_of_an_empty_queue_is_zero(broker: RedisBroker) -> None:
    assert Queue(broker, "nothing").latency() == 0.0


def test_iterates_newest_first_across_pages(broker: RedisBroker, redis_client: redis.Redis,
                                            keys: KeySchema, make_job: MakeJob) -> None:
    raws = [make_job(args=[n]) for n in range(120)]
    for raw in raws:
        redis_client.lpush(keys.queue("default"), raw)

    records = list(Queue(broker))

    assert [record.value for record in records] == raws[::-1]
    first = records[0]
    assert (first.klass, first.args, first.queue) == ("Work", [119], "default")
    assert first.item is not None
    assert first.jid == first.item["jid"]


def test_unparseable_entries_are_listed_with_a_stand_in_jid(broker: RedisBroker,
                                                            redis_client: redis.Redis,
                                                            keys: KeySchema) -> None:
    redis_client.lpush(keys.queue("default"), b"\xff not json")

    (record,) = list(Queue(broker))

    assert record.item is None
    assert record.klass == "(unparseable)"
    assert record.jid.startswith("unparseable-")
    assert len(record.jid) == len("unparseable-") + 12
    assert not record.requeueable


def test_delete_removes_every_occurrence_of_the_raw(broker: RedisBroker,
                                                    redis_client: redis.Redis,
                                                    keys: KeySchema, make_job: MakeJob) -> None:
    doomed, kept = make_job(), make_job()
    redis_client.lpush(keys.queue("default"), doomed, kept, doomed)
    queue = Queue(broker)

    assert queue.delete(doomed) == 2
    assert [record.value for record in queue] == [kept]
    found = queue.find(json.loads(kept)["jid"])
    assert found is not None
    assert found.value == kept


def test_clear_deletes_the_queue(broker: RedisBroker, redis_client: redis.Redis,
                                 keys: KeySchema, make_job: MakeJob) -> None:
    redis_client.lpush(keys.queue("default"), make_job(), make_job())
    queue = Queue(broker)

    assert queue.clear() == 2
    assert queue.size() == 0
    assert redis_client.exists(keys.queue("default")) == 0
    assert queue.clear() == 0


def test_jobs_pages_in_fetch_order(broker: RedisBroker, redis_client: redis.Redis,
                                   keys: KeySchema, make_job: MakeJob) -> None:
    raws = [make_job() for _ in range(5)]
    for raw in raws:  # pushed in this order: raws[0] is fetched first
        redis_client.lpush(keys.queue("default"), raw)
    queue = Queue(broker)

    assert [record.value for record in queue.jobs(0, 2)] == raws[:2]
    assert [record.value for record in queue.jobs(2, 2)] == raws[2:4]
    assert [record.value for record in queue.jobs(4, 2)] == raws[4:]
    assert queue.jobs(5, 2) == []


def test_pause_and_resume(broker: RedisBroker, redis_client: redis.Redis,
                          keys: KeySchema) -> None:
    queue = Queue(broker, "mail")

    queue.pause()
    assert queue.paused
    assert redis_client.smembers(keys.paused_queues) == {b"mail"}
    queue.resume()
    assert not queue.paused


def test_all_lists_registered_queues_by_name(broker: RedisBroker, redis_client: redis.Redis,
                                             keys: KeySchema, make_job: MakeJob) -> None:
    redis_client.sadd(keys.queues, "mail", "default")
    redis_client.lpush(keys.queue("mail"), make_job("mail", enqueued_at=time.time() - 60))
    Queue(broker, "default").pause()

    summaries = Queue.all(broker)

    assert [s.name for s in summaries] == ["default", "mail"]
    assert summaries[0] == QueueSummary("default", 0, 0.0, True)
    mail = summaries[1]
    assert (mail.size, mail.paused) == (1, False)
    assert mail.latency >= 60
    assert set(mail.to_dict()) == {"name", "size", "latency", "paused"}


def test_an_empty_name_is_refused(broker: RedisBroker) -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        Queue(broker, "")
