"""Heartbeat: presence written before anything else, retried, never stopped by a failure."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

import pytest
import redis

import cogworker
from cogworker.core.hookspecs import WorkerHandle
from cogworker.core.outage import OutageLog
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from cogworker.redis.server_process import free_port
from cogworker.worker.heartbeat import Heartbeat, resident_memory_kb
from helpers.redis_servers import RedisServerFactory
from worker.conftest import MakeApp
from worker.support import FakeManager, FakeWorker, client_of, promote, wait_for


def make_heartbeat(app: cogworker.App, manager: FakeManager, *, reliable: bool = True,
                   outages: OutageLog | None = None,
                   on_stop: threading.Event | None = None) -> Heartbeat:
    stop_event = on_stop or threading.Event()
    return Heartbeat(app, manager, outages or OutageLog(), lambda: reliable,
                     worker=FakeWorker(app, manager), on_stop=stop_event.set)


def test_first_beat_writes_presence_with_info_and_stop_removes_it(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app(queues=("critical", "critical", "default"), concurrency=3)
    manager = FakeManager(busy=2)
    manager.quiet()
    heartbeat = make_heartbeat(app, manager)

    assert heartbeat.start(abort_if=lambda: False)
    try:
        presence = redis_client.hgetall(keys.process(app.identity))
        assert presence[b"busy"] == b"2"
        assert presence[b"quiet"] == b"true"
        info = json.loads(presence[b"info"])
        assert info["pid"] == os.getpid()
        assert info["concurrency"] == 3
        assert info["queues"] == ["critical", "critical", "default"]
        assert info["identity"] == app.identity
        assert info["version"] == cogworker.__version__
        assert isinstance(info["hostname"], str) and info["hostname"]
        assert isinstance(info["started_at"], float)
        assert info["rss_kb"] is None or info["rss_kb"] > 0
        assert 0 < redis_client.ttl(keys.process(app.identity)) <= 60
        assert redis_client.sismember(keys.processes, app.identity)
        assert redis_client.smembers(keys.queues) >= {b"critical", b"default"}
        assert redis_client.sismember(keys.inprogress_identities, app.identity)
        assert redis_client.hget(keys.last_beat, app.identity) is not None
        assert heartbeat.is_running
    finally:
        heartbeat.stop()

    assert not redis_client.exists(keys.process(app.identity))
    assert not redis_client.sismember(keys.processes, app.identity)
    assert not heartbeat.is_running


def test_started_at_stays_fixed_across_beats(make_app: MakeApp, redis_client: redis.Redis,
                                             keys: KeySchema) -> None:
    app = make_app()
    heartbeat = make_heartbeat(app, FakeManager(), reliable=False)
    assert heartbeat.beat()
    first = json.loads(redis_client.hget(keys.process(app.identity), "info") or b"{}")
    assert heartbeat.beat()
    second = json.loads(redis_client.hget(keys.process(app.identity), "info") or b"{}")

    assert first["started_at"] == second["started_at"]
    # a basic-fetch process does not register an in-progress list
    assert not redis_client.sismember(keys.inprogress_identities, app.identity)
    heartbeat.stop()


def test_first_beat_is_retried_until_redis_answers(
    make_app: MakeApp, redis_server_factory: RedisServerFactory
) -> None:
    port = free_port()
    app = make_app(url=f"redis://127.0.0.1:{port}/0")
    started: list[RedisServer] = []

    def start_server_later() -> None:
        time.sleep(1.0)
        started.append(redis_server_factory(port=port, appendonly=False))

    starter = threading.Thread(target=start_server_later)
    starter.start()
    heartbeat = make_heartbeat(app, FakeManager())
    try:
        assert heartbeat.start(abort_if=lambda: False)
    finally:
        starter.join()
        heartbeat.stop()
    assert started, "the server was started while the heartbeat waited"


def test_stop_requested_while_waiting_for_the_first_beat_starts_nothing(
    make_app: MakeApp, readonly_server: RedisServer, keys: KeySchema
) -> None:
    app = make_app(url=readonly_server.url)
    asked: list[bool] = []

    def abort_after_two_tries() -> bool:
        asked.append(True)
        return len(asked) >= 2

    heartbeat = make_heartbeat(app, FakeManager())
    assert not heartbeat.start(abort_if=abort_after_two_tries)

    assert len(asked) == 2
    assert not heartbeat.is_running
    assert not heartbeat.remote.listening.is_set()
    heartbeat.stop()
    client = client_of(readonly_server)
    assert not client.exists(keys.process(app.identity))
    client.close()


def test_a_failed_beat_does_not_end_the_loop(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = make_app()
    heartbeat = make_heartbeat(app, FakeManager())
    assert heartbeat.start(abort_if=lambda: False)
    presence = keys.process(app.identity)
    try:
        with caplog.at_level(logging.ERROR, logger="cogworker.outage"):
            redis_client.delete(presence)
            redis_client.set(presence, "not a hash")  # the next beat's HSET fails
            assert wait_for(lambda: "heartbeat" in caplog.text and "WRONGTYPE" in caplog.text)
        redis_client.delete(presence)
        assert wait_for(lambda: redis_client.type(presence) == b"hash")
        assert heartbeat.is_running
    finally:
        heartbeat.stop()


def test_unavailable_beats_are_logged_once_then_summarized_then_recovered(
    make_app: MakeApp, readonly_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(url=readonly_server.url)
    outages = OutageLog(summary_interval=0.2)
    heartbeat = make_heartbeat(app, FakeManager(), outages=outages)
    attempts = 0
    with caplog.at_level(logging.WARNING, logger="cogworker.outage"):
        deadline = time.monotonic() + 0.7
        while time.monotonic() < deadline or attempts < 10:
            assert not heartbeat.beat()
            attempts += 1
            time.sleep(0.02)
        promote(readonly_server)
        assert heartbeat.beat()

    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("heartbeat:")]
    assert len([line for line in lines if "Redis unavailable" in line]) == 1
    assert any("still unavailable" in line for line in lines)
    assert "available again" in lines[-1]
    assert len(lines) < attempts
    heartbeat.stop()


def test_heartbeat_hook_gets_the_worker_after_each_beat(make_app: MakeApp) -> None:
    app = make_app()
    seen: list[WorkerHandle] = []

    class Recorder:
        @cogworker.hookimpl
        def cogworker_heartbeat(self, worker: WorkerHandle) -> None:
            seen.append(worker)

    app.hooks.plugin_manager.register(Recorder(), name="recorder")
    manager = FakeManager()
    manager.performing.append({"jid": "abc", "class": "Work"})
    heartbeat = make_heartbeat(app, manager)
    assert heartbeat.start(abort_if=lambda: False)
    try:
        assert wait_for(lambda: len(seen) >= 2)
    finally:
        heartbeat.stop()
    assert seen[0].identity == app.identity
    assert seen[0].performing_jobs() == [{"jid": "abc", "class": "Work"}]


def test_resident_memory_is_read_from_proc_status(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmRSS:\t  12345 kB\n")
    assert resident_memory_kb(status) == 12345
    assert resident_memory_kb(tmp_path / "missing") is None
