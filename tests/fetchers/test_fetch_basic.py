"""Weighted order, paused queues, FIFO, and the basic fetcher's settling and shutdown."""

from __future__ import annotations

import json
import logging
import random
from collections import Counter

import pytest
import redis

from cogworker.core.broker import UnitOfWork
from cogworker.fetchers.basic import BasicFetcher
from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.fetchers.weighted import fetch_order
from cogworker.redis.keys import KeySchema
from fetchers.fetch_helpers import IDENTITY, MakeJob, Push


def test_a_heavier_queue_is_tried_first_more_often() -> None:
    rng = random.Random(7)
    firsts = Counter(fetch_order(["high", "high", "high", "low"], rng)[0] for _ in range(4000))

    assert 0.70 < firsts["high"] / 4000 < 0.80  # weight 3 vs 1: first with p = 3/4


def test_the_order_names_each_queue_once_and_never_starves_one() -> None:
    rng = random.Random(1)
    orders = [fetch_order(["a", "a", "b", "c", "a"], rng) for _ in range(200)]

    assert all(sorted(order) == ["a", "b", "c"] for order in orders)
    assert {order[0] for order in orders} == {"a", "b", "c"}


@pytest.fixture(params=["basic", "reliable"])
def fetcher(request: pytest.FixtureRequest, basic: BasicFetcher,
            reliable: ReliableFetcher) -> BasicFetcher | ReliableFetcher:
    return basic if request.param == "basic" else reliable


def test_jobs_come_out_in_the_order_they_were_pushed(
    fetcher: BasicFetcher | ReliableFetcher, push: Push, make_job: MakeJob,
) -> None:
    jobs = [make_job("default") for _ in range(3)]
    for raw in jobs:
        push(raw)

    fetched = [fetcher.fetch(["default"], 1.0)[0].raw for _ in jobs]

    assert fetched == jobs


def test_paused_queues_are_skipped(
    fetcher: BasicFetcher | ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    paused_job, open_job = make_job("paused"), make_job("open")
    push(paused_job, open_job)
    redis_client.sadd(keys.paused_queues, "paused")

    first = fetcher.fetch(["paused", "paused", "open"], 1.0)
    second = fetcher.fetch(["paused", "open"], 0.1)

    assert first == [UnitOfWork("open", open_job)]
    assert second == []
    assert redis_client.lrange(keys.queue("paused"), 0, -1) == [paused_job.encode()]


def test_nothing_waiting_returns_nothing_after_the_timeout(
    fetcher: BasicFetcher | ReliableFetcher,
) -> None:
    assert fetcher.fetch(["a", "b"], 0.1) == []
    assert fetcher.fetch(["a"], 0.1) == []


def test_basic_give_back_puts_the_job_next_in_line(
    basic: BasicFetcher, push: Push, make_job: MakeJob,
) -> None:
    first, second = make_job(), make_job()
    push(first, second)
    work = basic.fetch(["default"], 1.0)[0]

    assert basic.give_back(work) is True
    assert basic.fetch(["default"], 1.0)[0].raw == first


def test_basic_interrupt_files_the_record(
    basic: BasicFetcher, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    work = UnitOfWork("default", '{"jid":"x"}')

    assert basic.interrupt(work, "retry", 123.0, '{"jid":"x","retry_count":1}') is True
    assert redis_client.zrange(keys.retry, 0, -1, withscores=True) == [
        (b'{"jid":"x","retry_count":1}', 123.0)
    ]


def _working(job: str) -> str:
    return json.dumps({"queue": json.loads(job)["queue"], "payload": json.loads(job),
                       "run_at": 1})


def test_basic_shutdown_requeues_what_the_workers_hash_says_is_running(
    basic: BasicFetcher, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
    caplog: pytest.LogCaptureFixture,
) -> None:
    running, finished = make_job("a"), make_job("a")
    kept = make_job("b")
    cron = make_job("c", periodic_until_executed=True, periodic_pjid="p1")
    redis_client.hset(keys.workers(IDENTITY), mapping={
        "t1": _working(running), "t2": _working(finished), "t3": _working(kept),
        "t4": _working(cron), "t5": "{not json",
    })

    with caplog.at_level(logging.WARNING):
        count = basic.requeue_unfinished([finished], [kept])

    assert count == 2
    assert redis_client.lrange(keys.queue("a"), 0, -1) == [running.encode()]
    assert redis_client.llen(keys.queue("b")) == 0
    assert redis_client.lrange(keys.queue("c"), 0, -1) == [cron.encode()]
    assert redis_client.get(keys.periodic_running("p1")) == json.loads(cron)["jid"].encode()
    assert "unreadable entry" in caplog.text
