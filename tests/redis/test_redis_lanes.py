"""The lanes: one pooled connection kept for the claims, one for the acknowledgements.

What a lane saves (system calls, instructions) is measured by ``benchmarks/run hot-path``,
never by a test; these check that a lane is one connection, survives the server closing it,
leaves the pool its other connections, is refused by an unknown name, goes back on close,
and is not shared with a forked child.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest
import redis

import cogworker
from cogworker.core.broker import UnitOfWork
from cogworker.core.payload import dumps, new_jid
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.lanes import ACKNOWLEDGEMENTS, CLAIMS, LANES
from cogworker.redis.scripts import Scripts
from helpers.redis_servers import RedisServerFactory

PACKAGE = "cogworker.redis"


@pytest.fixture
def private_url(redis_server_factory: RedisServerFactory) -> str:
    """A server of this test's own: its client list holds only this test's connections."""
    return redis_server_factory(appendonly=False).url


@pytest.fixture
def observer(private_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(private_url)
    yield client
    client.close()


def others(observer: redis.Redis) -> set[int]:
    """The ids of every connection but the observer's own."""
    own = observer.client_id()
    return {int(entry["id"]) for entry in observer.client_list() if int(entry["id"]) != own}


def lane_id(scripts: Scripts, name: str) -> int:
    """The server's id of lane ``name``'s connection."""
    with scripts.lanes.use(name) as client:
        return int(client.client_id())


def delete_if_owned(scripts: Scripts, lane: str | None) -> object:
    return scripts.run(PACKAGE, "delete_if_owned", ["lock"], ["owner"], lane=lane)


def test_calls_on_a_lane_from_several_threads_share_its_one_connection(
    private_url: str, observer: redis.Redis
) -> None:
    scripts = Scripts(make_client(private_url, max_connections=8))
    failures: list[BaseException] = []

    def calls() -> None:
        try:
            for _ in range(25):
                assert delete_if_owned(scripts, ACKNOWLEDGEMENTS) == 0
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=calls) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert failures == []
    # 100 calls from 4 threads, on one connection
    assert others(observer) == {lane_id(scripts, ACKNOWLEDGEMENTS)}
    scripts.lanes.close()


def test_a_lane_whose_connection_the_server_closed_connects_again_without_an_error(
    private_url: str, observer: redis.Redis
) -> None:
    scripts = Scripts(make_client(private_url, max_connections=4))
    assert delete_if_owned(scripts, CLAIMS) == 0
    killed = lane_id(scripts, CLAIMS)
    assert observer.client_kill_filter(_id=str(killed)) == 1  # as a restart would
    assert delete_if_owned(scripts, CLAIMS) == 0  # the lane saw the close before sending
    reopened = lane_id(scripts, CLAIMS)
    assert reopened != killed
    assert others(observer) == {reopened}
    scripts.lanes.close()


def test_an_unknown_lane_is_refused_with_the_names_of_the_lanes(private_url: str) -> None:
    scripts = Scripts(make_client(private_url, max_connections=2))
    with pytest.raises(ValueError, match="no lane 'fetches': the lanes are claims, "
                                         "acknowledgements"):
        delete_if_owned(scripts, "fetches")


def test_with_both_lanes_open_the_pool_still_has_a_connection_per_thread_and_five_spare(
    private_url: str, namespace: str
) -> None:
    concurrency = 3
    app = cogworker.App(redis_url=private_url, namespace=namespace, concurrency=concurrency)
    try:
        broker = app.broker
        assert isinstance(broker, RedisBroker)
        raw = dumps({"class": "Work", "jid": new_jid(), "queue": "default", "args": []})
        broker.held.claim("holder-1", ["default"], 5)  # opens the claims lane
        broker.held.release("holder-1", [UnitOfWork("default", raw)])  # and the other
        pool = broker.client.connection_pool
        assert isinstance(pool, redis.BlockingConnectionPool)
        pool.timeout = 0.2  # a pool too small for the lanes fails in a fifth of a second
        holders = [redis.Redis(connection_pool=pool, single_connection_client=True)
                   for _ in range(concurrency + 5)]  # each takes a connection of its own
        assert len({id(holder.connection) for holder in holders}) == concurrency + 5
        for holder in holders:
            holder.close()
    finally:
        app.close()


def test_the_held_jobs_are_claimed_and_released_on_their_two_lanes_and_closed_with_the_broker(
    private_url: str, observer: redis.Redis, namespace: str
) -> None:
    keys = KeySchema(namespace)
    broker = RedisBroker(make_client(private_url, max_connections=8), keys)
    raw = dumps({"class": "Work", "jid": new_jid(), "queue": "default", "args": []})
    observer.lpush(keys.queue("default"), raw)
    batch = broker.held.claim("holder-1", ["default"], 5)
    assert [work.raw for work in batch.works] == [raw]
    assert broker.held.release("holder-1", [UnitOfWork("default", raw)]) == 1
    assert observer.llen(keys.inprogress("holder-1")) == 0
    lanes = {lane_id(broker.scripts, name) for name in LANES}
    assert len(lanes) == 2
    assert lanes <= others(observer)  # a claim and a release, each on its own lane
    broker.close()
    assert others(observer) == set()  # every connection closed, the lanes' too
    observer.lpush(keys.queue("default"), raw)
    assert [work.raw for work in broker.held.claim("holder-1", ["default"], 5).works] == [raw]
    broker.close()  # a lane opens again after a close


def test_a_forked_child_opens_a_lane_of_its_own(private_url: str, observer: redis.Redis) -> None:
    scripts = Scripts(make_client(private_url, max_connections=4))
    assert delete_if_owned(scripts, ACKNOWLEDGEMENTS) == 0
    parent_lane = lane_id(scripts, ACKNOWLEDGEMENTS)
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one call on the lane, its connection's id, and out
        code = 0
        try:
            delete_if_owned(scripts, ACKNOWLEDGEMENTS)
            os.write(writing, str(lane_id(scripts, ACKNOWLEDGEMENTS)).encode())
        except BaseException:
            code = 1
        os._exit(code)
    os.close(writing)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with os.fdopen(reading) as pipe:
        child_lane = int(pipe.read())
    assert child_lane != parent_lane
    assert delete_if_owned(scripts, ACKNOWLEDGEMENTS) == 0  # the parent's lane was left alone
    assert lane_id(scripts, ACKNOWLEDGEMENTS) == parent_lane
    scripts.lanes.close()
