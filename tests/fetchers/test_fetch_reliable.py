"""The reliable fetcher: a job is held (on Redis, its in-progress list) until settled."""

from __future__ import annotations

import json

import redis

from cogworker.core.broker import Fetcher, UnitOfWork
from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import text
from fetchers.fetch_helpers import IDENTITY, MakeJob, Push


def held(client: redis.Redis, keys: KeySchema) -> list[str]:
    return [text(raw) for raw in client.lrange(keys.inprogress(IDENTITY), 0, -1)]


def jid(raw: str) -> str:
    return str(json.loads(raw)["jid"])


def test_it_implements_the_fetcher_protocol(reliable: ReliableFetcher) -> None:
    assert isinstance(reliable, Fetcher)
    assert reliable.reliable is True
    assert reliable.mode == "reliable"


def test_a_fetched_job_is_held_until_acknowledged(
    reliable: ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    job = make_job()
    push(job)
    redis_client.set(keys.orphanings(jid(job)), 2)

    works = reliable.fetch(["default"], 1.0)
    on_list_while_running = held(redis_client, keys)
    reliable.acknowledge(works)

    assert works == [UnitOfWork("default", job)]
    assert on_list_while_running == [job]
    assert held(redis_client, keys) == []
    assert redis_client.exists(keys.orphanings(jid(job))) == 0


def test_several_jobs_are_acknowledged_in_one_call(
    reliable: ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    jobs = [make_job("a"), make_job("b"), make_job("a"), make_job("b")]
    push(*jobs)
    for raw in jobs:
        redis_client.set(keys.orphanings(jid(raw)), 1)

    works = reliable.fetch(["a", "b"], 1.0, max_jobs=4)
    reliable.acknowledge(works[:3])

    assert sorted(w.raw for w in works) == sorted(jobs)
    assert held(redis_client, keys) == [works[3].raw]
    assert [redis_client.exists(keys.orphanings(jid(w.raw))) for w in works] == [0, 0, 0, 1]


def test_a_batch_takes_at_most_max_jobs_and_drains_in_pushed_order(
    reliable: ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    jobs = [make_job("only") for _ in range(5)]
    push(*jobs)

    first = reliable.fetch(["only"], 1.0, max_jobs=3)
    second = reliable.fetch(["only", "other"], 1.0, max_jobs=3)

    assert [w.raw for w in first + second] == jobs
    assert redis_client.llen(keys.queue("only")) == 0
    assert len(held(redis_client, keys)) == 5


def test_give_back_puts_the_job_at_the_head_of_its_queue(
    reliable: ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    first, second = make_job(), make_job()
    push(first, second)
    work = reliable.fetch(["default"], 1.0)[0]

    assert reliable.give_back(work) is True
    assert held(redis_client, keys) == []
    assert reliable.give_back(work) is False  # no longer held: nothing written twice
    assert redis_client.lrange(keys.queue("default"), 0, -1) == [second.encode(),
                                                                 first.encode()]
    assert reliable.fetch(["default"], 1.0)[0].raw == first


def test_give_back_retakes_the_running_lock_of_a_cron_run(
    reliable: ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    job = make_job("cron", periodic_until_executed=True, periodic_pjid="entry-1")
    push(job)
    work = reliable.fetch(["cron"], 1.0)[0]

    assert reliable.give_back(work) is True
    assert redis_client.get(keys.periodic_running("entry-1")) == jid(job).encode()
    assert redis_client.ttl(keys.periodic_running("entry-1")) > 420


def test_interrupt_files_the_record_and_drops_the_job_in_one_step(
    reliable: ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    job = make_job()
    push(job)
    redis_client.set(keys.orphanings(jid(job)), 1)
    work = reliable.fetch(["default"], 1.0)[0]
    record = job[:-1] + ',"interrupted_count":1}'

    assert reliable.interrupt(work, "retry", 1000.0, record) is True
    assert redis_client.zrange(keys.retry, 0, -1, withscores=True) == [(record.encode(), 1000.0)]
    assert held(redis_client, keys) == []
    assert redis_client.exists(keys.orphanings(jid(job))) == 0


def test_interrupt_does_nothing_for_a_job_no_longer_held(
    reliable: ReliableFetcher, make_job: MakeJob, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    work = UnitOfWork("default", make_job())

    assert reliable.interrupt(work, "dead", 1000.0, work.raw) is False
    assert redis_client.exists(keys.dead) == 0


def test_park_unsettled_hands_the_record_over_and_drops_the_job(
    reliable: ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    job = make_job()
    push(job)
    work = reliable.fetch(["default"], 1.0)[0]

    assert reliable.in_progress() == [job]
    assert reliable.park_unsettled(work, "dead", 5.0, job) is True
    assert reliable.park_unsettled(work, "dead", 5.0, job) is False
    [record] = redis_client.lrange(keys.unsettled, 0, -1)
    assert json.loads(record) == {"set": keys.dead, "score": 5.0, "payload": job}
    assert reliable.in_progress() == []


def test_shutdown_drops_finished_keeps_kept_and_requeues_the_rest_in_fetch_order(
    reliable: ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema,
) -> None:
    waiting = make_job("q")
    finished, kept = make_job("q"), make_job("q")
    unfinished = [make_job("q"), make_job("q", periodic_until_executed=True,
                                          periodic_pjid="p9")]
    push(finished, unfinished[0], kept, unfinished[1])
    fetched = reliable.fetch(["q"], 1.0, max_jobs=4)
    push(waiting)
    redis_client.set(keys.orphanings(jid(finished)), 1)
    redis_client.set(keys.orphanings(jid(unfinished[0])), 1)

    count = reliable.requeue_unfinished([finished], [kept])

    assert len(fetched) == 4
    assert count == 2
    assert held(redis_client, keys) == [kept]
    assert redis_client.exists(keys.orphanings(jid(finished))) == 0
    assert redis_client.get(keys.orphanings(jid(unfinished[0]))) == b"1"  # not an orphaning
    assert redis_client.get(keys.periodic_running("p9")) == jid(unfinished[1]).encode()
    assert [w.raw for w in reliable.fetch(["q"], 1.0, max_jobs=3)] == [*unfinished, waiting]


def test_shutdown_with_nothing_held_requeues_nothing(reliable: ReliableFetcher) -> None:
    assert reliable.requeue_unfinished([], []) == 0


def test_a_payload_that_is_not_json_is_given_back_to_the_default_queue(
    reliable: ReliableFetcher, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    redis_client.lpush(keys.queue("odd"), b"\xff not json")
    work = reliable.fetch(["odd"], 1.0)[0]

    assert reliable.give_back(work) is True
    assert redis_client.lrange(keys.queue("default"), 0, -1) == [b"\xff not json"]
    assert held(redis_client, keys) == []
