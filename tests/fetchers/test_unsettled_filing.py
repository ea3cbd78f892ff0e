"""Failures a stopping process handed over are filed by whoever recovers next."""

from __future__ import annotations

import json

import redis

from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.redis.broker import RedisBroker
from cogworker.redis.filing import unsettled_record
from cogworker.redis.keys import KeySchema
from fetchers.fetch_helpers import MakeJob, Push


def test_a_parked_failure_is_filed_into_its_set(
    reliable: ReliableFetcher, broker: RedisBroker, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    job = make_job()
    push(job)
    work = reliable.fetch(["default"], 1.0)[0]
    redis_client.set(keys.orphanings(json.loads(job)["jid"]), 1)
    failed = job[:-1] + ',"error_class":"Boom"}'
    reliable.park_unsettled(work, "dead", 77.0, failed)

    filed = broker.held.file_unsettled()

    assert filed == [("dead", failed)]
    assert redis_client.zrange(keys.dead, 0, -1, withscores=True) == [(failed.encode(), 77.0)]
    assert redis_client.exists(keys.unsettled, keys.orphanings(json.loads(job)["jid"])) == 0


def test_unusable_records_are_quarantined_and_the_rest_still_filed(
    broker: RedisBroker, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    retry_job, schedule_job = make_job(), make_job()
    bad = [
        "not json",
        json.dumps({"set": "queues", "score": 1, "payload": "x"}),
        json.dumps({"set": "retry", "score": "soon", "payload": "x"}),
        json.dumps({"set": "retry", "score": True, "payload": "x"}),
        json.dumps({"set": "retry", "score": 1, "payload": {"an": "object"}}),
    ]
    good = [json.dumps({"set": "retry", "score": "12.5", "payload": retry_job}),
            unsettled_record(keys, "schedule", 99, schedule_job)]
    redis_client.rpush(keys.unsettled, bad[0], good[0], *bad[1:], good[1])

    filed = broker.held.file_unsettled()

    assert filed == [("retry", retry_job), ("schedule", schedule_job)]
    assert redis_client.zrange(keys.retry, 0, -1, withscores=True) == [
        (retry_job.encode(), 12.5)]
    assert redis_client.lrange(keys.unsettled_quarantine, 0, -1) == [b.encode() for b in bad]
    assert 0 < redis_client.ttl(keys.unsettled_quarantine) <= 30 * 86_400
    assert redis_client.exists(keys.unsettled) == 0


def test_nothing_to_file_is_quick(broker: RedisBroker) -> None:
    assert broker.held.file_unsettled() == []
