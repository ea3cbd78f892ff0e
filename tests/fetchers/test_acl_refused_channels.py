"""A Redis user whose ACL allows the namespace's keys but no pub/sub channel (what Redis 7
gives a new user by default, ``acl-pubsub-default resetchannels``).

Every wake-up PUBLISH is then refused. The wake-up only makes idle workers look sooner, so
each push, give-back and requeue must still store the job exactly once and report success;
and a push must not announce again for a while (each refusal is a wasted command).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from cogworker.core.broker import RecoveryOptions, Relock
from cogworker.core.errors import BrokerPermissionError
from cogworker.fetchers.basic import BasicFetcher
from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import text
from fetchers.fetch_helpers import IDENTITY, MakeJob, Push

DEAD = "host-b:202:deadbeef"


@pytest.fixture
def broker(acl_user: Callable[..., str], keys: KeySchema) -> Iterator[RedisBroker]:
    """Overrides the fetcher tests' broker: this one's user may use no channel at all."""
    url = acl_user(f"~{keys.prefix}:*", "resetchannels", "+@all")
    broker = RedisBroker(make_client(url, max_connections=4), keys)
    yield broker
    broker.close()


def rejected_publishes(client: redis.Redis) -> int:
    """How many PUBLISH calls the server has refused (ACL) since it started."""
    stats = client.info("commandstats").get("cmdstat_publish", {})
    return int(stats.get("rejected_calls", 0))


def fetch_order(client: redis.Redis, keys: KeySchema, queue: str) -> list[str]:
    """The queue's raws in the order fetchers take them (they pop from the right)."""
    return [text(raw) for raw in reversed(client.lrange(keys.queue(queue), 0, -1))]


def test_pushes_store_each_job_once_and_stop_announcing_after_a_refusal(
    broker: RedisBroker, make_job: MakeJob, redis_client: redis.Redis, keys: KeySchema,
    caplog: pytest.LogCaptureFixture,
) -> None:
    singles = [make_job("q") for _ in range(3)]
    bulk = [make_job("q"), make_job("r")]
    later = make_job("q")

    with caplog.at_level(logging.WARNING):
        # The first push goes through push.lua, whose refused PUBLISH Redis 7 counts and
        # Redis 6.2 does not: count from after it. The next ones are LPUSH + PUBLISH.
        broker.queues.store([("q", singles[0])], [])
        before = rejected_publishes(redis_client)
        for raw in singles[1:]:
            broker.queues.store([("q", raw)], [])
        broker.queues.store([("q", bulk[0]), ("r", bulk[1])], [(time.time() + 60, later)])

    assert fetch_order(redis_client, keys, "q") == [*singles, bulk[0]]
    assert fetch_order(redis_client, keys, "r") == [bulk[1]]
    assert redis_client.zrange(keys.schedule, 0, -1) == [later.encode()]
    # The second push's PUBLISH was refused; after it, neither the third push nor the bulk
    # one sent any.
    assert rejected_publishes(redis_client) - before == 1
    [warning] = [r.getMessage() for r in caplog.records if "wake-up PUBLISH" in r.getMessage()]
    assert f"Redis refused the wake-up PUBLISH on {keys.wakeup}" in warning
    assert "ACL SETUSER <user> ~cogworker:* ~periodic:* resetchannels &cogworker:*" in warning
    assert "Jobs are stored all the same" in warning


def test_reliable_give_back_shutdown_requeue_and_orphan_recovery_move_each_job_once(
    broker: RedisBroker, reliable: ReliableFetcher, push: Push, make_job: MakeJob,
    redis_client: redis.Redis, keys: KeySchema, relock: Relock,
) -> None:
    jobs = [make_job("q") for _ in range(3)]
    push(*jobs)
    fetched = reliable.fetch(["q"], 1.0, max_jobs=3)
    orphans = [make_job("q"), make_job("q")]
    for raw in orphans:
        redis_client.lpush(keys.inprogress(DEAD), raw)
    redis_client.sadd(keys.inprogress_identities, DEAD)
    redis_client.hset(keys.last_beat, DEAD, int(redis_client.time()[0]) - 301)

    assert reliable.give_back(fetched[2]) is True  # held_return.lua
    assert reliable.requeue_unfinished([], []) == 2  # held_requeue_all.lua
    report = broker.held.recover_orphans(
        IDENTITY, RecoveryOptions(threshold=300.0, max_orphanings=3), relock,
    )  # requeue_orphan.lua

    assert report.moved == 2
    assert redis_client.llen(keys.inprogress(IDENTITY)) == 0
    assert redis_client.exists(keys.inprogress(DEAD)) == 0
    assert sorted(fetch_order(redis_client, keys, "q")) == sorted([*jobs, *orphans])


def test_basic_give_back_and_shutdown_requeue_move_each_job_once(
    basic: BasicFetcher, push: Push, make_job: MakeJob, redis_client: redis.Redis,
    keys: KeySchema,
) -> None:
    first, running = make_job("q"), make_job("q")
    push(first)
    work = basic.fetch(["q"], 1.0)[0]
    redis_client.hset(keys.workers(IDENTITY), "t1", json.dumps(
        {"queue": "q", "payload": json.loads(running), "run_at": 1}))

    assert basic.give_back(work) is True  # queue_push_back.lua: a refused PUBLISH inside
    assert basic.requeue_unfinished([], []) == 1  # queue_push_back.lua

    assert fetch_order(redis_client, keys, "q") == [running, first]  # both RPUSHed: next


def test_a_user_without_the_keys_gets_a_permission_error_that_says_what_to_grant(
    acl_user: Callable[..., str], keys: KeySchema, make_job: MakeJob,
    redis_client: redis.Redis,
) -> None:
    url = acl_user("~elsewhere:*", "&*", "+@all")
    broker = RedisBroker(make_client(url, max_connections=2), keys)
    try:
        for immediate in ([("q", make_job("q"))], [("q", make_job("q")), ("r", make_job("r"))]):
            with pytest.raises(BrokerPermissionError) as caught:
                broker.queues.store(immediate, [])
            assert "ACL SETUSER <user> ~cogworker:*" in str(caught.value)
            assert isinstance(caught.value.__cause__, redis.ResponseError)
        with pytest.raises(BrokerPermissionError):
            broker.queues.paused()
    finally:
        broker.close()
    assert redis_client.exists(keys.queue("q"), keys.queue("r")) == 0


def test_a_subscription_the_acl_refuses_is_a_permission_error(broker: RedisBroker) -> None:
    with (pytest.raises(BrokerPermissionError, match="ACL SETUSER"),
          broker.processes.subscribe_signals("host-a:1:abc")):
        pass
