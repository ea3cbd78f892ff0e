"""The push line's socket: a short busy-wait for the reply, then sleep; the socket timeout;
writes bigger than the socket buffer; and all of it over TLS to a real Redis."""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time
from collections.abc import Iterator

import pytest
import redis
import trustme

from cogworker.app import App
from cogworker.core.payload import dumps, new_jid
from cogworker.redis import push_line
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.keys import KeySchema
from cogworker.redis.line_socket import PAUSE, LineSocket, SpinBudget
from cogworker.redis.server import RedisServer
from helpers.proxy import TlsProxy
from helpers.workers import wait_until

LIMIT = 50e-6


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def misses(budget: SpinBudget, count: int) -> None:
    for _ in range(count):
        assert budget.deadline() is not None
        budget.missed()


# the budget ------------------------------------------------------------------------------
def test_a_limit_of_zero_never_busy_waits() -> None:
    budget = SpinBudget(0.0)
    assert budget.deadline() is None


def test_replies_within_the_busy_wait_keep_it_going() -> None:
    clock = Clock()
    budget = SpinBudget(LIMIT, clock)
    for _ in range(100):
        assert budget.deadline() == clock.now + LIMIT
        budget.hit()


def test_a_burst_of_slow_replies_does_not_stop_the_busy_wait() -> None:
    budget = SpinBudget(LIMIT, Clock())
    misses(budget, 5)  # the machine was busy for a moment: 49 % of the share
    assert budget.deadline() is not None
    for _ in range(50):  # the moment passed
        budget.hit()
    misses(budget, 5)
    assert budget.deadline() is not None


def test_a_redis_that_keeps_answering_late_is_slept_for_and_tried_again_later() -> None:
    clock = Clock()
    budget = SpinBudget(LIMIT, clock)
    misses(budget, 6)
    assert budget.deadline() is None  # more than half the replies were late: sleep at once
    clock.now += PAUSE
    misses(budget, 1)  # one try a pause later: still late
    assert budget.deadline() is None
    clock.now += PAUSE
    assert budget.deadline() is not None
    budget.hit()  # the Redis is near again: the busy-wait goes on
    assert budget.deadline() is not None


# the socket ------------------------------------------------------------------------------
@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, peer = socket.socketpair()
    yield ours, peer
    ours.close()
    peer.close()


def answer_later(peer: socket.socket, data: bytes, delay: float) -> threading.Thread:
    def answer() -> None:
        time.sleep(delay)
        peer.sendall(data)

    thread = threading.Thread(target=answer)
    thread.start()
    return thread


def wired(pair: tuple[socket.socket, socket.socket]) -> tuple[LineSocket, SpinBudget]:
    """Our end of ``pair`` as a line socket, and its budget."""
    budget = SpinBudget(LIMIT)
    return LineSocket(pair[0], budget), budget


def test_a_reply_that_is_there_is_read_while_busy_waiting(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    line, budget = wired(pair)
    peer = pair[1]
    peer.sendall(b":1\r\n")
    assert line.receive() == b":1\r\n"
    assert budget.slow_share == 0.0


def test_a_late_reply_is_waited_for_asleep_and_counted_late(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    line, budget = wired(pair)
    thread = answer_later(pair[1], b":1\r\n", 0.05)
    assert line.receive() == b":1\r\n"
    thread.join()
    assert budget.slow_share > 0.0


def test_replies_that_always_come_late_stop_the_busy_wait(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    line, budget = wired(pair)
    # Six late replies in a row stop it. A reply can still count as prompt when this
    # thread is descheduled for the whole delay (a loaded machine), so up to 30 may be sent.
    for _ in range(30):
        thread = answer_later(pair[1], b":1\r\n", 0.005)  # 100 times the busy-wait
        assert line.receive() == b":1\r\n"
        thread.join()
        if budget.deadline() is None:
            break
    assert budget.deadline() is None, f"still busy-waiting: slow share {budget.slow_share}"


def test_without_a_reply_within_the_socket_timeout_the_wait_raises(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    pair[0].settimeout(0.2)  # what redis-py's socket_timeout sets
    line, _ = wired(pair)
    with pytest.raises(TimeoutError, match=r"within 0\.2 s"):
        line.receive()


def test_the_peer_closing_reads_as_the_end(pair: tuple[socket.socket, socket.socket]) -> None:
    line, _ = wired(pair)
    pair[1].close()
    assert line.receive() == b""


def test_a_write_bigger_than_the_socket_buffers_arrives_whole(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    line, _ = wired(pair)
    peer = pair[1]
    data = os.urandom(8 * 1024 * 1024)
    received = bytearray()

    def read_slowly() -> None:
        while len(received) < len(data):
            time.sleep(0.001)
            received.extend(peer.recv(65536))

    reader = threading.Thread(target=read_slowly)
    reader.start()
    line.send_all(data)
    reader.join()
    assert bytes(received) == data


# through a push line, on a real Redis ----------------------------------------------------
def big_job(size: int) -> str:
    return dumps({"class": "Work", "args": ["x" * size], "queue": "default", "jid": new_jid()})


def stored(client: redis.Redis, keys: KeySchema) -> list[str]:
    """The raws on the default queue, oldest push first."""
    raws: list[bytes] = client.lrange(keys.queue("default"), 0, -1)  # type: ignore[assignment]
    return [raw.decode() for raw in reversed(raws)]


def push_all(broker: RedisBroker, raws: list[str]) -> None:
    for raw in raws:
        broker.queues.store([("default", raw)], [])


def test_a_job_bigger_than_the_socket_buffers_is_pushed_whole(
    redis_url: str, keys: KeySchema, redis_client: redis.Redis,
) -> None:
    broker = RedisBroker(make_client(redis_url, max_connections=2), keys)
    raws = [big_job(10), big_job(10), big_job(6 * 1024 * 1024), big_job(10)]
    push_all(broker, raws)  # push.lua, then the push line for the rest
    broker.close()
    assert stored(redis_client, keys) == raws


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, str]:
    """A server context for 127.0.0.1 and the file of the authority that signed it."""
    authority = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    ca_file = tmp_path_factory.mktemp("tls") / "ca.pem"
    authority.cert_pem.write_to_path(str(ca_file))
    return context, str(ca_file)


def test_pushes_over_tls_reach_redis_once_each(
    redis_server: RedisServer, keys: KeySchema, redis_client: redis.Redis,
    certificates: tuple[ssl.SSLContext, str],
) -> None:
    assert redis_server.port is not None
    before = {entry["id"] for entry in redis_client.client_list()}  # earlier tests' idle lines
    with TlsProxy(redis_server.port, *certificates) as proxy:
        broker = RedisBroker(make_client(proxy.url, max_connections=2), keys)
        assert broker.client.connection_pool.connection_class is redis.SSLConnection
        raws = [big_job(10) for _ in range(200)] + [big_job(3 * 1024 * 1024), big_job(10)]
        push_all(broker, raws)
        pushing = [entry["id"] for entry in redis_client.client_list()
                   if entry["cmd"] == "lpush" and entry["id"] not in before]
        assert len(pushing) == 1  # one push line, through the proxy
        redis_client.client_kill_filter(_id=pushing[0])
        wait_until(lambda: proxy.relays_ended == 1, 10.0, "the proxy passing the kill on")
        after_kill = big_job(10)
        push_all(broker, [after_kill])  # the closed line is noticed and reopened first
        broker.close()
    assert stored(redis_client, keys) == [*raws, after_kill]


def test_the_setting_reaches_the_push_lines(
    redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    limits: list[float] = []

    class RecordedBudget(SpinBudget):
        def __init__(self, limit: float) -> None:
            limits.append(limit)
            super().__init__(limit)

    monkeypatch.setattr(push_line, "SpinBudget", RecordedBudget)
    app = App(redis_url=redis_url, namespace=namespace, push_busy_wait=0.0002)

    @app.job
    def work() -> None: ...

    for _ in range(3):  # push.lua, then the push line
        work.perform_async()
    app.close()
    assert limits == [0.0002]
