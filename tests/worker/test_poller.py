"""The poller: graduation (paused while quiet), orphan-check timing, readiness for the ticker."""

from __future__ import annotations

import logging
import time
from typing import cast

import pytest
import redis

import cogworker
from cogworker.core.broker import Fetcher
from cogworker.core.outage import OutageLog
from cogworker.core.payload import dumps, new_jid
from cogworker.fetchers.basic import BasicFetcher
from cogworker.fetchers.recovery import hook_relock
from cogworker.fetchers.reliable import ReliableFetcher
from cogworker.redis.keys import KeySchema
from cogworker.redis.replies import as_text
from cogworker.redis.server import RedisServer
from cogworker.worker.poller import Poller
from worker.conftest import MakeApp
from worker.support import FakeManager, promote, wait_for


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def job(queue: str = "default") -> str:
    return dumps({"class": "Work", "args": [1], "queue": queue, "jid": new_jid(),
                  "retry": True, "created_at": time.time()})


def leave_orphan(client: redis.Redis, keys: KeySchema, identity: str, raw: str) -> None:
    """What a reliable process killed long ago leaves behind: an in-progress list, its
    registry entry and an old last beat, but no presence key."""
    server_now = int(client.time()[0])
    client.lpush(keys.inprogress(identity), raw)
    client.sadd(keys.inprogress_identities, identity)
    client.hset(keys.last_beat, identity, server_now - 10_000)


def fetcher_of(app: cogworker.App, *, reliable: bool = True) -> Fetcher:
    """The built-in strategy a process of ``app`` would fetch with."""
    kind = ReliableFetcher if reliable else BasicFetcher
    return kind(app.broker, app.identity, relock=hook_relock(app))


def make_poller(app: cogworker.App, manager: FakeManager, *, reliable: bool = True,
                clock: FakeClock | None = None, outages: OutageLog | None = None) -> Poller:
    return Poller(app, manager, outages or OutageLog(), fetcher_of(app, reliable=reliable),
                  clock=clock or FakeClock())


def test_graduates_due_entries_of_schedule_and_retry(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app()
    due_scheduled, due_retry, later = job("mail"), job("default"), job("mail")
    now = time.time()
    redis_client.zadd(keys.schedule, {due_scheduled: now - 5, later: now + 3600})
    redis_client.zadd(keys.retry, {due_retry: now - 1})

    make_poller(app, FakeManager()).poll_once()

    assert redis_client.zrange(keys.schedule, 0, -1) == [later.encode()]
    assert redis_client.zcard(keys.retry) == 0
    assert redis_client.llen(keys.queue("mail")) == 1
    assert redis_client.llen(keys.queue("default")) == 1


def test_graduation_is_skipped_while_quiet(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app()
    redis_client.zadd(keys.schedule, {job(): time.time() - 5})
    manager = FakeManager()
    manager.quiet()
    poller = make_poller(app, manager)

    poller.poll_once()
    assert redis_client.zcard(keys.schedule) == 1
    assert redis_client.llen(keys.queue("default")) == 0

    manager.unquiet()
    poller.poll_once()
    assert redis_client.zcard(keys.schedule) == 0
    assert redis_client.llen(keys.queue("default")) == 1


def test_orphan_check_runs_at_the_first_poll_then_once_per_interval(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app(orphan_check_interval=60.0)
    recovered: list[tuple[str, int]] = []

    class Recorder:
        @cogworker.hookimpl
        def cogworker_orphans_recovered(self, app: cogworker.App, identity: str,
                                        count: int) -> None:
            recovered.append((identity, count))

    app.hooks.plugin_manager.register(Recorder(), name="recorder")
    clock = FakeClock()
    manager = FakeManager()
    poller = make_poller(app, manager, clock=clock)
    leave_orphan(redis_client, keys, "gone:1:aaaaaaaaaaaa", job("first"))

    poller.poll_once()
    assert redis_client.llen(keys.queue("first")) == 1
    assert recovered == [("gone:1:aaaaaaaaaaaa", 1)]
    assert manager.reconciles == 1

    leave_orphan(redis_client, keys, "gone:2:bbbbbbbbbbbb", job("second"))
    clock.now += 59.0
    poller.poll_once()
    assert redis_client.llen(keys.queue("second")) == 0  # not due yet
    assert poller.orphan_checks_run == 1

    clock.now += 1.0
    poller.poll_once()
    assert redis_client.llen(keys.queue("second")) == 1
    assert recovered[-1] == ("gone:2:bbbbbbbbbbbb", 1)
    assert poller.orphan_checks_run == 2
    assert manager.reconciles == 2


def test_basic_fetch_process_recovers_orphans_but_does_not_reconcile(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app()
    manager = FakeManager()
    leave_orphan(redis_client, keys, "gone:3:cccccccccccc", job())

    make_poller(app, manager, reliable=False).poll_once()

    assert redis_client.llen(keys.queue("default")) == 1
    assert manager.reconciles == 0


def test_repeat_orphans_are_buried_and_handed_to_the_manager(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app()
    manager = FakeManager()
    raw = job()
    redis_client.rpush(keys.repeat_orphans, raw)

    make_poller(app, manager).poll_once()

    assert redis_client.llen(keys.repeat_orphans) == 0
    assert redis_client.zcard(keys.dead) == 1
    [(stored, reason)] = manager.dead
    assert reason == "orphaned"
    dead = cast("list[bytes]", redis_client.zrange(keys.dead, 0, -1))
    assert stored == [as_text(raw) for raw in dead]


def test_ready_for_ticker_after_the_first_check_that_read_the_registry(
    make_app: MakeApp,
) -> None:
    poller = make_poller(make_app(), FakeManager())
    assert not poller.ready_for_ticker.is_set()

    poller.poll_once()

    assert poller.ready_for_ticker.is_set()


def test_lost_connection_makes_the_next_check_due_at_the_next_poll(
    make_app: MakeApp, masterdown_server: RedisServer
) -> None:
    app = make_app(url=masterdown_server.url)
    clock = FakeClock()
    poller = make_poller(app, FakeManager(), clock=clock)

    poller.poll_once()
    assert not poller.ready_for_ticker.is_set()
    poller.poll_once()  # same clock: due again because the connection was lost
    assert poller.orphan_checks_run == 2

    promote(masterdown_server)
    poller.poll_once()
    assert poller.ready_for_ticker.is_set()
    poller.poll_once()  # after a good check the next one waits for the interval
    assert poller.orphan_checks_run == 3


def test_graduation_errors_are_collapsed_while_redis_is_unavailable(
    make_app: MakeApp, masterdown_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(url=masterdown_server.url)
    outages = OutageLog(summary_interval=0.2)
    poller = make_poller(app, FakeManager(), outages=outages)
    polls = 0
    with caplog.at_level(logging.WARNING, logger="cogworker.outage"):
        deadline = time.monotonic() + 0.7
        while time.monotonic() < deadline or polls < 10:
            poller.poll_once()
            polls += 1
            time.sleep(0.02)
        promote(masterdown_server)
        poller.poll_once()

    outage_lines = [r.getMessage() for r in caplog.records if r.name == "cogworker.outage"]
    for site in ("graduate schedule", "graduate retry"):
        lines = [line for line in outage_lines if line.startswith(site + ":")]
        assert len([line for line in lines if "Redis unavailable" in line]) == 1, lines
        assert any("still unavailable" in line for line in lines), lines
        assert "available again" in lines[-1]
        assert len(lines) < polls


def test_the_thread_polls_until_stopped(
    make_app: MakeApp, redis_client: redis.Redis, keys: KeySchema
) -> None:
    app = make_app(poll_interval=0.05)
    poller = Poller(app, FakeManager(), OutageLog(), fetcher_of(app))
    poller.start()
    try:
        redis_client.zadd(keys.schedule, {job(): time.time() - 1})
        assert wait_for(lambda: redis_client.llen(keys.queue("default")) == 1)
        assert poller.ready_for_ticker.is_set()
    finally:
        poller.stop()
