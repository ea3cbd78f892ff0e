"""Remote control over pub/sub: quiet, resume, stop, unknown messages, resubscription."""

from __future__ import annotations

import logging
import threading

import pytest
import redis

from cogworker.core.outage import OutageLog
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from cogworker.worker.heartbeat import Heartbeat
from cogworker.worker.remote import RemoteControl
from helpers.redis_servers import RedisServerFactory
from worker.conftest import MakeApp
from worker.support import FakeManager, FakeWorker, wait_for


def test_quiet_resume_and_stop_round_trip_through_redis(make_app: MakeApp) -> None:
    app = make_app()
    manager = FakeManager()
    stop_requested = threading.Event()
    heartbeat = Heartbeat(app, manager, OutageLog(), lambda: True,
                          worker=FakeWorker(app, manager), on_stop=stop_requested.set)
    assert heartbeat.start(abort_if=lambda: False)
    try:
        assert heartbeat.remote.listening.wait(10)
        publisher = make_app().broker

        assert publisher.processes.signal(app.identity, "quiet") == 1
        assert wait_for(lambda: manager.is_quiet)

        publisher.processes.signal(app.identity, "resume")
        assert wait_for(lambda: not manager.is_quiet)

        publisher.processes.signal(app.identity, "stop")
        assert stop_requested.wait(10)
        assert heartbeat.is_running  # stop is the launcher's job, not the subscriber's
    finally:
        heartbeat.stop()
    assert wait_for(lambda: not heartbeat.remote.listening.is_set(), timeout=2)


def test_unknown_message_is_a_warning_and_changes_nothing(
    make_app: MakeApp, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app()
    manager = FakeManager()
    stop_requested = threading.Event()
    remote = RemoteControl(app.broker.processes, app.identity, manager, stop_requested.set,
                           OutageLog())
    remote.start()
    try:
        assert remote.listening.wait(10)
        with caplog.at_level(logging.WARNING, logger="cogworker.worker.remote"):
            # not a signal the registry sends: someone else's message on the channel
            redis.Redis.from_url(app.settings.redis_url or "").publish(
                KeySchema(app.settings.namespace).signal(app.identity), "reboot")
            assert wait_for(lambda: "Unknown signal message: 'reboot'" in caplog.text)
    finally:
        remote.stop()
    assert not manager.is_quiet
    assert not stop_requested.is_set()


def test_subscriber_resubscribes_after_redis_restarts(
    make_app: MakeApp, redis_server_factory: RedisServerFactory
) -> None:
    server: RedisServer = redis_server_factory(appendonly=False)
    app = make_app(url=server.url)
    manager = FakeManager()
    remote = RemoteControl(app.broker.processes, app.identity, manager, lambda: None, OutageLog())
    remote.start()
    try:
        assert remote.listening.wait(10)
        server.restart()
        # subscribed again on the restarted server: a message reaches the process
        assert wait_for(lambda: app.broker.ping()
                        and app.broker.processes.signal(app.identity, "quiet") == 1)
        assert wait_for(lambda: manager.is_quiet)
    finally:
        remote.stop()
