"""The single-push path: its own connections, kept fresh, never retrying a sent job."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from cogworker.core.errors import BrokerError, BrokerUnavailableError
from cogworker.core.payload import dumps, new_jid
from cogworker.redis.broker import RedisBroker
from cogworker.redis.connection import make_client
from cogworker.redis.errors import translate
from cogworker.redis.keys import KeySchema
from cogworker.redis.push import WAKEUP_RECHECK, Pusher
from cogworker.redis.push_line import PushLine
from helpers.redis_servers import RedisServerFactory, demotable_broker


def job(queue: str = "default") -> str:
    return dumps({"class": "Work", "args": [1], "queue": queue, "jid": new_jid()})


@pytest.fixture
def broker(redis_url: str, keys: KeySchema) -> Iterator[RedisBroker]:
    broker = RedisBroker(make_client(redis_url, max_connections=4), keys)
    yield broker
    broker.close()


def push_twice(broker: RedisBroker, queue: str = "default") -> list[str]:
    """Register the queue (push.lua), then push once through a push line."""
    raws = [job(queue), job(queue)]
    for raw in raws:
        broker.queues.store([(queue, raw)], [])
    return raws


def stored(client: redis.Redis, keys: KeySchema, queue: str = "default") -> list[str]:
    raws = client.lrange(keys.queue(queue), 0, -1)
    return [raw.decode() if isinstance(raw, bytes) else raw for raw in reversed(raws)]


def connection_ids(client: redis.Redis) -> set[str]:
    """Every connection the server has now (the session's server also keeps idle push
    lines that earlier tests' brokers left open)."""
    return {str(entry["id"]) for entry in client.client_list()}


def push_connection_ids(client: redis.Redis, before: set[str]) -> list[str]:
    """Connections opened after ``before`` whose last command was a push's LPUSH or
    PUBLISH."""
    return [str(entry["id"]) for entry in client.client_list()
            if entry["cmd"] in ("lpush", "publish") and str(entry["id"]) not in before]


def listening(client: redis.Redis, channel: str) -> Any:
    """A subscription to ``channel``, confirmed by Redis before this returns."""
    listener = client.pubsub()  # type: ignore[no-untyped-call, unused-ignore]
    listener.subscribe(channel)
    confirmation = listener.get_message(timeout=5.0)
    assert confirmation is not None and confirmation["type"] == "subscribe"
    return listener


def command_calls(client: redis.Redis, name: str) -> int:
    stats = client.info("commandstats").get(f"cmdstat_{name}", {})
    return int(stats.get("calls", 0))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_without_listeners_the_wake_up_is_left_out_and_asked_again_a_second_later(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    clock = Clock()
    pusher = Pusher(broker.client, keys, broker.scripts, clock=clock)
    before = command_calls(redis_client, "publish")
    for _ in range(4):  # push.lua, then the line: PUBLISH reaches nobody, then none
        pusher.push("default", job())
    assert command_calls(redis_client, "publish") == before + 2
    clock.now += WAKEUP_RECHECK
    listener = listening(redis_client, keys.wakeup)  # a worker starts waiting on several queues
    for _ in range(2):  # asked again: somebody listens now, so every push announces
        pusher.push("default", job())
    assert command_calls(redis_client, "publish") == before + 4
    assert len(stored(redis_client, keys)) == 6
    listener.close()
    pusher.close()


def test_with_a_listener_every_push_wakes_it(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    listener = listening(redis_client, keys.wakeup)
    pusher = Pusher(broker.client, keys, broker.scripts, clock=Clock())
    for _ in range(4):
        pusher.push("mail", job("mail"))
    messages = []
    for _ in range(4):
        message = listener.get_message(timeout=5.0)
        assert message is not None
        messages.append(message["data"])
    assert messages == [b"mail"] * 4
    listener.close()
    pusher.close()


def test_a_killed_push_connection_is_reopened_before_the_job_is_sent(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    before = connection_ids(redis_client)
    raws = push_twice(broker)
    (killed,) = push_connection_ids(redis_client, before)
    redis_client.client_kill_filter(_id=killed)
    raw = job()
    broker.queues.store([("default", raw)], [])  # no error: the dead socket was noticed first
    assert stored(redis_client, keys) == [*raws, raw]
    assert push_connection_ids(redis_client, before) != [killed]


def test_pushes_go_on_after_a_redis_restart(
    redis_server_factory: RedisServerFactory, keys: KeySchema
) -> None:
    server = redis_server_factory(appendonly=False)
    broker = RedisBroker(make_client(server.url, max_connections=2), keys)
    push_twice(broker)
    server.kill()
    with pytest.raises(BrokerUnavailableError):
        broker.queues.store([("default", job())], [])
    server.restart()
    raw = job()
    broker.queues.store([("default", raw)], [])
    assert stored(broker.client, keys) == [raw]
    broker.close()


def test_a_line_idle_past_the_health_interval_is_pinged_first(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis, redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    push_twice(broker)
    pings = command_calls(redis_client, "ping")
    broker.queues.store([("default", job())], [])
    assert command_calls(redis_client, "ping") == pings  # just used: no PING
    monkeypatch.setattr("cogworker.redis.push.HEALTH_CHECK_INTERVAL", 0.0)
    eager = RedisBroker(make_client(redis_url, max_connections=2), keys)
    push_twice(eager)  # the second push opens the line: nothing to check yet
    pings = command_calls(redis_client, "ping")
    eager.queues.store([("default", job())], [])  # idle for longer than 0 s
    assert command_calls(redis_client, "ping") == pings + 1
    assert len(stored(redis_client, keys)) == 6
    eager.close()


def test_an_error_reply_is_raised_and_the_next_push_works(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    push_twice(broker, "good")
    push_twice(broker, "bad")
    redis_client.delete(keys.queue("bad"))
    redis_client.set(keys.queue("bad"), "not a list")
    with pytest.raises(BrokerError) as caught:
        broker.queues.store([("bad", job("bad"))], [])
    assert not isinstance(caught.value, BrokerUnavailableError)
    assert "WRONGTYPE" in str(caught.value)
    raw = job("good")
    broker.queues.store([("good", raw)], [])  # both replies were read: nothing left over
    assert stored(redis_client, keys, "good")[-1] == raw


def test_a_read_only_replica_makes_a_push_unavailable(
    redis_server_factory: RedisServerFactory, keys: KeySchema
) -> None:
    broker, demote = demotable_broker(redis_server_factory, keys)
    push_twice(broker)
    demote()
    with pytest.raises(BrokerUnavailableError, match="READONLY"):
        broker.queues.store([("default", job())], [])
    broker.client.replicaof("NO", "ONE")  # a fail-over back: the line reconnects
    broker.queues.store([("default", job())], [])
    broker.close()


def test_threads_pushing_at_once_each_store_every_job_once(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    push_twice(broker)
    redis_client.delete(keys.queue("default"))
    clients_before = len(redis_client.client_list())
    per_thread, threads = 200, 8
    raws = [[job() for _ in range(per_thread)] for _ in range(threads)]
    barrier = threading.Barrier(threads)

    def pusher(mine: list[str]) -> None:
        barrier.wait()
        for raw in mine:
            broker.queues.store([("default", raw)], [])

    workers = [threading.Thread(target=pusher, args=(mine,)) for mine in raws]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    assert sorted(stored(redis_client, keys)) == sorted(raw for mine in raws for raw in mine)
    assert len(redis_client.client_list()) - clients_before <= threads


# It forks a process with threads on purpose, as a user's pre-fork server does; the child
# only pushes and leaves (Python 3.12+ warns about any such fork).
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:"
                            "DeprecationWarning")
def test_a_forked_child_pushes_on_its_own_connection(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis
) -> None:
    push_twice(broker)
    from_child, from_parent = job(), job()
    pid = os.fork()
    if pid == 0:  # the child: push, then leave without running the parent's teardown
        code = 0
        try:
            broker.queues.store([("default", from_child)], [])
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    broker.queues.store([("default", from_parent)], [])  # the parent's line was left alone
    assert stored(redis_client, keys)[-2:] == [from_child, from_parent]


def test_without_a_plain_socket_the_line_uses_redis_py(
    broker: RedisBroker, keys: KeySchema, redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(PushLine, "_ready_socket", lambda line: None)
    before = connection_ids(redis_client)
    raws = push_twice(broker)
    (killed,) = push_connection_ids(redis_client, before)
    redis_client.client_kill_filter(_id=killed)
    raw = job()
    broker.queues.store([("default", raw)], [])
    assert stored(redis_client, keys) == [*raws, raw]


class FakeServer:
    """A TCP server that says +OK to anything but a frame holding an ECHO, which it
    answers with ``reply`` (an empty reply closes the connection instead, None leaves it
    unanswered)."""

    def __init__(self, reply: bytes | None, *, hang_up_on_ping: bool = False) -> None:
        self.reply = reply
        self.hang_up_on_ping = hang_up_on_ping
        self.frames: list[bytes] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                self._converse(conn)

    def _converse(self, conn: socket.socket) -> None:
        while data := conn.recv(65536):
            if b"PING" in data and self.hang_up_on_ping:
                return
            if b"ECHO" not in data:  # redis-py's handshake, or a PING
                commands = data.count(b"\r\n*") + data.startswith(b"*")
                conn.sendall(b"+OK\r\n" * commands)
                continue
            self.frames.append(data)
            if self.reply is None:
                continue
            if not self.reply:
                return
            conn.sendall(self.reply)

    def close(self) -> None:
        self._listener.close()


ECHO_TWICE = b"*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n" * 2


def fake_line(server: FakeServer, idle_limit: float = 30.0, **options: Any) -> PushLine:
    connection = redis.Connection(port=server.port, protocol=2,  # type: ignore[no-untyped-call]
                                  **options)
    return PushLine(connection, idle_limit=idle_limit, busy_wait=50e-6)


@pytest.mark.parametrize("hang_up_on_ping", [False, True], ids=["wrong-answer", "hang-up"])
def test_a_line_whose_ping_fails_reconnects_before_sending(hang_up_on_ping: bool) -> None:
    server = FakeServer(b":1\r\n:1\r\n", hang_up_on_ping=hang_up_on_ping)
    line = fake_line(server, idle_limit=0.0)
    assert line.exchange(ECHO_TWICE, 2) == [1, 1]
    assert line.exchange(ECHO_TWICE, 2) == [1, 1]  # after "+OK" for PING, or no answer
    assert server.connections == 2
    assert server.frames == [ECHO_TWICE, ECHO_TWICE]
    line.close()
    server.close()


@pytest.mark.parametrize(("reply", "error", "message"), [
    (b"", BrokerUnavailableError, "closed the connection"),
    (b"$3\r\nabc\r\n", BrokerError, "unexpected reply"),
    (b":1\r\n*0\r\n", BrokerError, "unexpected reply"),
])
def test_a_broken_reply_raises_and_the_frame_is_sent_once(
    reply: bytes, error: type[BrokerError], message: str
) -> None:
    server = FakeServer(reply)
    line = fake_line(server)
    with pytest.raises(redis.RedisError) as caught:
        line.exchange(ECHO_TWICE, 2)
    translated = translate(caught.value)
    assert isinstance(translated, error)
    assert message in str(translated)
    assert server.frames == [ECHO_TWICE]  # sent once: a failure after the write is not retried
    server.close()


def test_a_reply_that_does_not_come_within_the_socket_timeout_is_unavailable() -> None:
    server = FakeServer(None)
    line = fake_line(server, socket_timeout=0.3)
    with pytest.raises(redis.TimeoutError) as caught:
        line.exchange(ECHO_TWICE, 2)
    assert isinstance(translate(caught.value), BrokerUnavailableError)
    assert server.frames == [ECHO_TWICE]
    server.close()
