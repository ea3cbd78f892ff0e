"""The launcher in-process (on a thread, so controlled through its token queue)."""

from __future__ import annotations

import logging
import os
import threading

import pytest
import redis

import cogworker
from cogworker.core.hookspecs import WorkerHandle
from cogworker.redis.keys import KeySchema
from cogworker.redis.server import RedisServer
from cogworker.worker.launcher import Launcher, weighted_queues
from worker.conftest import MakeApp
from worker.support import promote, wait_for


class LauncherThread:
    """Runs ``launcher.run()`` on a thread and keeps its exit code."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher
        self.exit_code: int | None = None
        self.thread = threading.Thread(target=self._run, name="test-launcher")

    def _run(self) -> None:
        self.exit_code = self.launcher.run()

    def __enter__(self) -> LauncherThread:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.thread.is_alive():
            self.launcher.request_stop()
        self.thread.join(30)

    def stop(self) -> int | None:
        self.launcher.request_stop()
        self.thread.join(30)
        assert not self.thread.is_alive(), "the launcher did not stop"
        return self.exit_code


class Lifecycle:
    def __init__(self) -> None:
        self.events: list[str] = []

    @cogworker.hookimpl
    def cogworker_startup(self, worker: WorkerHandle) -> None:
        self.events.append("startup")

    @cogworker.hookimpl
    def cogworker_shutdown(self, worker: WorkerHandle) -> None:
        self.events.append("shutdown")


def test_start_logs_one_line_then_stop_drains_and_cleans_up(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = make_app(queues=("critical", "critical", "default"), timeout=2.0)
    lifecycle = Lifecycle()
    app.hooks.plugin_manager.register(lifecycle, name="lifecycle")
    old_identity = app.identity
    launcher = Launcher(app)

    with caplog.at_level(logging.INFO, logger="cogworker.launcher"), \
            LauncherThread(launcher) as running:
        assert launcher.started.wait(20)
        identity = launcher.identity
        assert identity == app.identity != old_identity
        assert redis_client.exists(keys.process(identity))
        assert launcher.poller is not None
        assert launcher.poller.ready_for_ticker.wait(10)
        assert running.stop() == 0

    [line] = [r.getMessage() for r in caplog.records if " started identity=" in r.getMessage()]
    assert line.startswith(f"cogworker {cogworker.__version__} started identity={identity} ")
    assert f"pid={os.getpid()} concurrency=2 queues=critical:2,default:1 " in line
    assert "fetch=reliable" in line and "plugins=" in line and "lifecycle" in line
    assert f"redis={app.settings.redis_url}" in line
    assert "Received stop signal" in caplog.text
    assert lifecycle.events == ["startup", "shutdown"]
    assert not redis_client.exists(keys.process(identity))
    assert not redis_client.sismember(keys.processes, identity)


def test_a_queued_job_runs(make_app: MakeApp, redis_client: redis.Redis,
                           keys: KeySchema) -> None:
    app = make_app()
    done = threading.Event()

    @app.job(name="Ping")
    def ping(value: int) -> None:
        if value == 7:
            done.set()

    ping.perform_async(7)
    with LauncherThread(Launcher(app)) as running:
        assert done.wait(20)
        assert running.stop() == 0
    assert redis_client.llen(keys.queue("default")) == 0


def test_stop_before_the_first_beat_aborts_startup(
    make_app: MakeApp, readonly_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(url=readonly_server.url)
    lifecycle = Lifecycle()
    app.hooks.plugin_manager.register(lifecycle, name="lifecycle")
    launcher = Launcher(app)

    with caplog.at_level(logging.INFO, logger="cogworker.launcher"), \
            LauncherThread(launcher) as running:
        assert running.stop() == 0

    assert "Received stop signal before startup completed" in caplog.text
    assert not launcher.started.is_set()
    assert lifecycle.events == []


def test_quiet_while_waiting_for_the_first_beat_is_applied(
    make_app: MakeApp, readonly_server: RedisServer
) -> None:
    launcher = Launcher(make_app(url=readonly_server.url))
    with LauncherThread(launcher) as running:
        launcher.request_quiet()
        assert wait_for(lambda: launcher.manager is not None and launcher.manager.is_quiet)
        promote(readonly_server)
        assert launcher.started.wait(20)
        assert launcher.manager is not None and launcher.manager.is_quiet
        assert running.stop() == 0


def test_remote_stop_ends_the_run_with_exit_code_zero(make_app: MakeApp) -> None:
    app = make_app()
    launcher = Launcher(app)
    with LauncherThread(launcher) as running:
        assert launcher.started.wait(20)
        assert launcher.heartbeat is not None
        assert launcher.heartbeat.remote.listening.wait(10)
        make_app().broker.processes.signal(launcher.identity, "stop")
        running.thread.join(30)
        assert running.exit_code == 0


def test_dump_token_logs_thread_stacks(make_app: MakeApp,
                                       caplog: pytest.LogCaptureFixture) -> None:
    launcher = Launcher(make_app())
    with caplog.at_level(logging.WARNING, logger="cogworker.launcher"), \
            LauncherThread(launcher) as running:
        assert launcher.started.wait(20)
        launcher.tokens.put("dump")
        assert wait_for(lambda: "cogworker-heartbeat" in caplog.text)
        assert running.stop() == 0
    assert "cogworker-poller" in caplog.text


def test_weighted_queues_keep_first_appearance_order() -> None:
    assert weighted_queues(("b", "a", "b", "b")) == "b:3,a:1"
