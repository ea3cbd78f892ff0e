"""Orphan recovery: jobs of dead reliable processes go back to their queues, once."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import redis

from cogworker.core.broker import RecoveryOptions, RecoveryReport, Relock
from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.redis.broker import RedisBroker
from cogworker.redis.keys import KeySchema
from fetchers.fetch_helpers import IDENTITY, MakeJob

DEAD = "host-b:202:deadbeef"

Recover = Callable[..., RecoveryReport]


@pytest.fixture
def recover(broker: RedisBroker, relock: Relock) -> Recover:
    def run(**overrides: Any) -> RecoveryReport:
        options: dict[str, Any] = {"threshold": 300.0, "max_orphanings": 3, "scan": False}
        options.update(overrides)
        return broker.held.recover_orphans(IDENTITY, RecoveryOptions(**options), relock)

    return run


def leave_in_progress(client: redis.Redis, keys: KeySchema, jobs: Sequence[str], *,
                      beat_age: int | None = None, present: bool = False,
                      identity: str = DEAD, registered: bool = True) -> None:
    """What a reliable process that fetched ``jobs`` (in this order) leaves behind."""
    for raw in jobs:
        client.lpush(keys.inprogress(identity), raw)  # fetches push on the left
    if registered:
        client.sadd(keys.inprogress_identities, identity)
    if beat_age is not None:
        client.hset(keys.last_beat, identity, int(client.time()[0]) - beat_age)
    if present:
        client.hset(keys.process(identity), "busy", "1")
        client.expire(keys.process(identity), 60)


def jid(raw: str) -> str:
    return str(json.loads(raw)["jid"])


def test_a_process_with_a_presence_key_is_alive(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    leave_in_progress(redis_client, keys, [make_job()], beat_age=10_000, present=True)

    report = recover()

    assert (report.moved, report.registry_read) == (0, True)
    assert redis_client.llen(keys.inprogress(DEAD)) == 1
    assert redis_client.smembers(keys.inprogress_identities) == {DEAD.encode()}


def test_a_process_that_beat_120_s_ago_is_not_dead_yet(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    leave_in_progress(redis_client, keys, [make_job()], beat_age=120)

    assert recover().moved == 0
    assert redis_client.llen(keys.inprogress(DEAD)) == 1
    assert redis_client.hexists(keys.last_beat, DEAD)


def test_a_dead_process_s_jobs_run_next_in_their_fetch_order_and_it_is_forgotten(
    recover: Recover, broker: RedisBroker, redis_client: redis.Redis, keys: KeySchema,
    make_job: MakeJob, caplog: pytest.LogCaptureFixture,
) -> None:
    orphans = [make_job("q"), make_job("q"), make_job("q")]
    waiting = make_job("q")
    broker.queues.store([("q", waiting)], [])
    leave_in_progress(redis_client, keys, orphans, beat_age=301)
    with caplog.at_level(logging.WARNING):
        report = recover()
    fetcher = ReliableFetcher(broker, IDENTITY)
    order = [w.raw for w in fetcher.fetch(["q"], 1.0, max_jobs=4)]
    fetcher.close()

    assert report.moved == 3
    assert report.recovered == {DEAD: 3}
    assert order == [*orphans, waiting]
    assert redis_client.exists(keys.inprogress(DEAD)) == 0
    assert redis_client.smembers(keys.inprogress_identities) == set()
    assert not redis_client.hexists(keys.last_beat, DEAD)
    assert f"requeued 3 job(s) left in progress by dead process {DEAD}" in caplog.text
    assert [redis_client.get(keys.orphanings(jid(raw))) for raw in orphans] == [b"1"] * 3
    assert 0 < redis_client.ttl(keys.orphanings(jid(orphans[0]))) <= 7 * 86_400


def test_a_process_without_any_beat_stamp_is_dead_once_its_presence_is_gone(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    leave_in_progress(redis_client, keys, [make_job()])
    redis_client.hset(keys.last_beat, DEAD, "not a number")

    assert recover().moved == 1


def test_the_own_identity_is_never_recovered(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    leave_in_progress(redis_client, keys, [make_job()], identity=IDENTITY, beat_age=10_000)

    assert recover().moved == 0
    assert redis_client.llen(keys.inprogress(IDENTITY)) == 1


def test_an_unregistered_list_is_found_only_by_the_scan(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    leave_in_progress(redis_client, keys, [make_job()], registered=False)

    without_scan = recover()
    with_scan = recover(scan=True)

    assert (without_scan.moved, with_scan.moved) == (0, 1)
    assert with_scan.registry_read is True


def test_a_job_orphaned_too_often_is_parked_then_buried_in_dead(
    recover: Recover, broker: RedisBroker, redis_client: redis.Redis, keys: KeySchema,
    make_job: MakeJob,
) -> None:
    fatal, fine = make_job("q"), make_job("q")
    leave_in_progress(redis_client, keys, [fatal, fine], beat_age=1000)
    redis_client.set(keys.orphanings(jid(fatal)), 3)

    report = recover()
    parked = redis_client.lrange(keys.repeat_orphans, 0, -1)
    stored = broker.held.bury_repeat_orphans(1234.5, 3)

    assert (report.moved, report.parked) == (1, 1)
    assert redis_client.lrange(keys.queue("q"), 0, -1) == [fine.encode()]
    assert parked == [fatal.encode()]
    assert redis_client.llen(keys.repeat_orphans) == 0
    assert redis_client.zrange(keys.dead, 0, -1, withscores=True) == [(stored[0].encode(),
                                                                      1234.5)]
    record = json.loads(stored[0])
    assert record["jid"] == jid(fatal)
    assert record["error_class"] == "cogworker.JobOrphanedError"
    assert record["error_message"].startswith("orphaned more than 3 times")
    assert redis_client.exists(keys.orphanings(jid(fatal))) == 0
    assert redis_client.get(keys.stats_failed) == b"1"


def test_when_repeat_orphans_is_unusable_the_job_is_filed_in_dead_directly(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    fatal = make_job("q")
    leave_in_progress(redis_client, keys, [fatal], beat_age=1000)
    redis_client.set(keys.orphanings(jid(fatal)), 5)
    redis_client.set(keys.repeat_orphans, "a string, not a list")

    report = recover()

    assert len(report.buried) == 1
    assert json.loads(report.buried[0])["error_class"] == "cogworker.JobOrphanedError"
    assert redis_client.zrange(keys.dead, 0, -1) == [report.buried[0].encode()]
    assert redis_client.exists(keys.inprogress(DEAD)) == 0


def test_a_garbage_orphan_counter_starts_again(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    job = make_job()
    leave_in_progress(redis_client, keys, [job], beat_age=1000)
    redis_client.set(keys.orphanings(jid(job)), "garbage")

    assert recover().moved == 1
    assert redis_client.get(keys.orphanings(jid(job))) == b"1"


def test_a_job_whose_queue_key_is_unusable_stays_in_progress(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    stuck, fine = make_job("broken"), make_job("ok")
    redis_client.set(keys.queue("broken"), "not a list")
    leave_in_progress(redis_client, keys, [stuck, fine], beat_age=1000)

    report = recover()

    assert (report.moved, report.failed) == (1, 1)
    assert redis_client.lrange(keys.inprogress(DEAD), 0, -1) == [stuck.encode()]
    assert redis_client.smembers(keys.inprogress_identities) == {DEAD.encode()}


def test_recovery_retakes_a_missing_running_lock_for_the_recovered_jid(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    job = make_job("cron", periodic_until_executed=True, periodic_pjid="nightly")
    leave_in_progress(redis_client, keys, [job], beat_age=1000)

    recover()

    lock = keys.periodic_running("nightly")
    assert redis_client.get(lock) == jid(job).encode()
    assert redis_client.ttl(lock) > 420  # longer than active_ttl: it covers the queue wait


def test_recovery_leaves_a_running_lock_another_jid_owns(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    job = make_job("cron", periodic_until_executed=True, periodic_pjid="nightly")
    leave_in_progress(redis_client, keys, [job], beat_age=1000)
    lock = keys.periodic_running("nightly")
    redis_client.set(lock, "newer-jid", ex=50)

    assert recover().moved == 1
    assert redis_client.get(lock) == b"newer-jid"
    assert redis_client.ttl(lock) <= 50


def test_a_queue_no_live_process_reads_is_registered_and_reported(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema, make_job: MakeJob,
) -> None:
    now = int(redis_client.time()[0])
    redis_client.zadd(keys.live_queues, {"read": now, "stale": now - 600})
    leave_in_progress(redis_client, keys,
                      [make_job("read"), make_job("stale"), make_job("lonely")], beat_age=1000)

    report = recover()

    assert sorted(report.unlisted_queues) == ["lonely", "stale"]
    assert {b"lonely", b"stale"} <= redis_client.smembers(keys.queues)
    assert b"read" not in redis_client.smembers(keys.queues)


def test_an_empty_list_of_a_dead_process_is_forgotten_and_a_live_one_kept(
    recover: Recover, redis_client: redis.Redis, keys: KeySchema,
) -> None:
    leave_in_progress(redis_client, keys, [], beat_age=1000)
    leave_in_progress(redis_client, keys, [], identity="alive:1:1", beat_age=5)

    recover()

    assert redis_client.smembers(keys.inprogress_identities) == {b"alive:1:1"}
    assert redis_client.hkeys(keys.last_beat) == [b"alive:1:1"]


def test_a_process_vouched_dead_is_recovered_without_the_liveness_check(
    broker: RedisBroker, relock: Relock, redis_client: redis.Redis, keys: KeySchema,
    make_job: MakeJob,
) -> None:
    orphans = [make_job("q"), make_job("q")]
    leave_in_progress(redis_client, keys, orphans, beat_age=5, present=True)
    options = RecoveryOptions(threshold=300.0, max_orphanings=3)

    assert broker.held.recover_orphans(IDENTITY, options, relock).moved == 0  # looks alive
    report = broker.held.recover_process(DEAD, options, relock)

    assert (report.moved, report.recovered) == (2, {DEAD: 2})
    # the earliest fetched nearest the pop end (the right): it runs first again
    assert redis_client.lrange(keys.queue("q"), 0, -1) == [raw.encode() for raw in
                                                           reversed(orphans)]
    assert [redis_client.get(keys.orphanings(jid(raw))) for raw in orphans] == [b"1"] * 2
    assert redis_client.smembers(keys.inprogress_identities) == set()
