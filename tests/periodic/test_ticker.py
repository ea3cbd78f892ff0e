"""The ticker on a real Redis with a fake clock: one run per slot, catch-up, disable,
push failures, until_executed blocking, back-off, publishing and the thread."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
import redis

from cogworker.app import App
from cogworker.core.errors import BrokerUnavailableError
from cogworker.core.middleware import ClientMiddleware, PushContext
from cogworker.core.periodic_types import ClaimResult, PeriodicEntry
from cogworker.periodic import admin
from cogworker.worker.ticker import Ticker
from helpers.redis_access import keys_of
from periodic.conftest import MakeApp, MakeTicker
from periodic.support import START, FakeClock, StandInManager, queued, text, wait_for

MINUTE = 60


def failing_pushes(count: int) -> ClientMiddleware:
    """A client middleware whose first ``count`` pushes raise."""
    remaining = [count]

    def middleware(ctx: PushContext, call_next: Callable[[], str | None]) -> str | None:
        if remaining[0] > 0:
            remaining[0] -= 1
            raise BrokerUnavailableError("simulated: connection lost during the push")
        return call_next()

    return middleware


def test_a_due_slot_fires_once_and_the_next_slot_fires_next_minute(
    app: App, make_ticker: MakeTicker, clock: FakeClock, redis_client: redis.Redis,
) -> None:
    entry = app.periodic("* * * * *", "reports.Sync", args=[1, "x"], queue="reports", retry=2)
    ticker = make_ticker(app)

    ticker.tick()
    ticker.tick()
    clock.advance(30)
    ticker.tick()

    jobs = queued(app, "reports")
    assert len(jobs) == 1
    job = jobs[0]
    assert {k: job[k] for k in ("class", "args", "retry", "queue", "periodic_pjid",
                                "periodic_slot")} == {
        "class": "reports.Sync", "args": [1, "x"], "retry": 2, "queue": "reports",
        "periodic_pjid": entry.pjid, "periodic_slot": int(START)}
    assert "periodic_until_executed" not in job
    assert text(redis_client, keys_of(app).periodic_last_slot(entry.pjid)) == str(int(START))

    clock.advance(MINUTE)
    ticker.tick()
    assert [j["periodic_slot"] for j in queued(app, "reports")] == [START, START + MINUTE]


def test_of_several_tickers_ticking_in_threads_each_slot_fires_exactly_once(
    make_app: MakeApp, make_ticker: MakeTicker,
) -> None:
    times = [START + second + 0.25 for second in range(30)]
    apps = [make_app() for _ in range(5)]
    for app in apps:  # five "processes", each with its own connections and ticker
        app.periodic("* * * * * *", "jobs.EverySecond")
    tickers = [make_ticker(app, clock=iter(times).__next__) for app in apps]
    start = threading.Barrier(len(tickers))

    def run(ticker: Ticker) -> None:
        start.wait()
        for _ in times:
            ticker.tick()

    threads = [threading.Thread(target=run, args=(ticker,)) for ticker in tickers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    slots = [job["periodic_slot"] for job in queued(apps[0])]
    assert sorted(slots) == [START + second for second in range(30)]


def test_catch_up_on_fires_the_most_recent_due_slot_at_a_cold_start(
    app: App, make_ticker: MakeTicker, clock: FakeClock,
) -> None:
    app.periodic("0 * * * *", "hourly.Job")  # last due slot: 10:00, now 10:00 + 25 min
    clock.advance(25 * MINUTE)
    make_ticker(app).tick()
    assert [job["periodic_slot"] for job in queued(app)] == [START]


def test_catch_up_off_a_cold_start_sets_the_baseline_and_does_not_fire(
    make_app: MakeApp, make_ticker: MakeTicker, clock: FakeClock, redis_client: redis.Redis,
) -> None:
    first, second = make_app(periodic_catch_up=False), make_app(periodic_catch_up=False)
    entry = first.periodic("0 * * * *", "hourly.Job")
    second.periodic("0 * * * *", "hourly.Job")
    clock.advance(25 * MINUTE)

    make_ticker(first).tick()
    make_ticker(second).tick()  # racing cold starts: neither fires

    assert queued(first) == []
    assert text(redis_client, keys_of(first).periodic_last_slot(entry.pjid)) == str(int(START))


def test_catch_up_off_an_entry_that_ran_before_catches_up_one_slot(
    make_app: MakeApp, make_ticker: MakeTicker, clock: FakeClock, redis_client: redis.Redis,
) -> None:
    app = make_app(periodic_catch_up=False)
    entry = app.periodic("0 * * * *", "hourly.Job")
    redis_client.set(keys_of(app).periodic_last_slot(entry.pjid), int(START) - 5 * 3600)
    clock.advance(25 * MINUTE)
    ticker = make_ticker(app)

    ticker.tick()
    clock.advance(3600)
    ticker.tick()

    assert [job["periodic_slot"] for job in queued(app)] == [START, START + 3600]


def test_a_disabled_entry_neither_fires_nor_advances_and_fires_again_once_enabled(
    app: App, make_ticker: MakeTicker, clock: FakeClock, redis_client: redis.Redis,
) -> None:
    entry = app.periodic("* * * * *", "jobs.Minutely", unique="until_executed")
    ticker = make_ticker(app)
    admin.disable(app, entry.pjid[:8])

    ticker.tick()
    clock.advance(MINUTE)
    ticker.tick()

    assert queued(app) == []
    assert not redis_client.exists(keys_of(app).periodic_last_slot(entry.pjid))
    assert not redis_client.exists(keys_of(app).periodic_running(entry.pjid))

    admin.enable(app, entry.pjid)
    make_ticker(app).tick()  # a fresh ticker: the current slot was not handled by it
    ticker.tick()  # this one handled the current slot while disabled
    app.hooks.release_periodic_lock(app, queued(app)[0])  # that run finished
    clock.advance(MINUTE)
    ticker.tick()
    assert [job["periodic_slot"] for job in queued(app)] == [START + MINUTE, START + 2 * MINUTE]


def test_a_push_failing_after_a_won_claim_is_rolled_back_and_fires_on_a_later_tick(
    app: App, make_ticker: MakeTicker, clock: FakeClock, redis_client: redis.Redis,
) -> None:
    entry = app.periodic("* * * * *", "jobs.Minutely", unique="until_executed")
    app.client_middleware.append(failing_pushes(1))
    ticker = make_ticker(app)

    ticker.tick()

    assert queued(app) == []
    assert text(redis_client, keys_of(app).periodic_last_slot(entry.pjid)) == str(int(START) - 1)
    assert not redis_client.exists(keys_of(app).periodic_slot_lock(entry.pjid, int(START)))
    assert not redis_client.exists(keys_of(app).periodic_running(entry.pjid))

    clock.advance(5)
    ticker.tick()
    ticker.tick()
    jobs = queued(app)
    assert [job["periodic_slot"] for job in jobs] == [START]
    assert text(redis_client, keys_of(app).periodic_running(entry.pjid)) == jobs[0]["jid"]


def test_a_failed_rollback_is_retried_before_the_entry_is_looked_at_again(
    app: App, make_ticker: MakeTicker, clock: FakeClock, redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entry = app.periodic("* * * * *", "jobs.Minutely")
    app.client_middleware.append(failing_pushes(1))
    hooks = app.hooks
    real_rollback = hooks.rollback_periodic_claim
    attempts: list[int] = []

    def flaky_rollback(*args: object) -> bool | None:
        attempts.append(1)
        if len(attempts) == 1:
            raise BrokerUnavailableError("simulated: Redis went away")
        return real_rollback(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(hooks, "rollback_periodic_claim", flaky_rollback)
    ticker = make_ticker(app)

    ticker.tick()
    assert len(ticker.rollbacks) == 1
    assert text(redis_client, keys_of(app).periodic_last_slot(entry.pjid)) == str(int(START))

    clock.advance(5)
    ticker.tick()  # rollback first, then the entry claims the slot again and fires it
    assert len(ticker.rollbacks) == 0
    assert [job["periodic_slot"] for job in queued(app)] == [START]
    assert len(attempts) == 2


def test_until_executed_blocks_while_a_run_holds_the_lock_then_skips_after_the_grace(
    app: App, make_ticker: MakeTicker, clock: FakeClock, redis_client: redis.Redis,
) -> None:
    entry = app.periodic("* * * * *", "jobs.Long", unique="until_executed")
    ticker = make_ticker(app)
    ticker.tick()
    first = queued(app)[0]
    assert first["periodic_until_executed"] is True
    running = keys_of(app).periodic_running(entry.pjid)
    assert text(redis_client, running) == first["jid"]

    clock.advance(MINUTE)
    for _ in range(4):  # 0, 5, 10 s blocked: retried; at 15 s the slot counts as skipped
        ticker.tick()
        clock.advance(5)
    app.hooks.release_periodic_lock(app, first)  # the long run ends
    ticker.tick()
    assert len(queued(app)) == 1

    clock.advance(MINUTE)
    ticker.tick()
    assert [job["periodic_slot"] for job in queued(app)] == [START, START + 2 * MINUTE]
    assert text(redis_client, running) == queued(app)[1]["jid"]


def test_a_slot_blocked_by_a_lock_released_within_the_grace_still_fires(
    app: App, make_ticker: MakeTicker, clock: FakeClock,
) -> None:
    app.periodic("* * * * *", "jobs.Long", unique="until_executed")
    ticker = make_ticker(app)
    ticker.tick()
    clock.advance(MINUTE)
    ticker.tick()  # blocked
    app.hooks.release_periodic_lock(app, queued(app)[0])
    clock.advance(5)
    ticker.tick()
    assert [job["periodic_slot"] for job in queued(app)] == [START, START + MINUTE]


def test_a_push_skipped_as_a_duplicate_releases_the_running_lock(
    app: App, make_ticker: MakeTicker, redis_client: redis.Redis,
) -> None:
    entry = app.periodic("* * * * *", "jobs.Long", unique="until_executed")
    app.dispatch_override = lambda ctx: None
    make_ticker(app).tick()
    assert not redis_client.exists(keys_of(app).periodic_running(entry.pjid))
    assert text(redis_client, keys_of(app).periodic_last_slot(entry.pjid)) == str(int(START))


def test_an_entry_that_errors_backs_off_and_the_others_keep_firing(
    app: App, make_ticker: MakeTicker, clock: FakeClock, redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = app.periodic("* * * * *", "jobs.Broken")
    app.periodic("* * * * *", "jobs.Fine")
    redis_client.rpush(keys_of(app).periodic_last_slot(broken.pjid), "wrong type")
    hooks = app.hooks
    claims: list[str] = []
    real_claim = hooks.claim_periodic_slot

    def counting(app_: App, entry: PeriodicEntry, slot: int, jid: str) -> ClaimResult | None:
        claims.append(entry.job_name)
        return real_claim(app_, entry, slot, jid)

    monkeypatch.setattr(hooks, "claim_periodic_slot", counting)
    ticker = make_ticker(app)

    ticker.tick()  # fails: back off 5 s
    clock.advance(4)
    ticker.tick()  # still backing off
    clock.advance(1)
    ticker.tick()  # fails again: back off 10 s
    clock.advance(9)
    ticker.tick()
    redis_client.delete(keys_of(app).periodic_last_slot(broken.pjid))
    clock.advance(1)
    ticker.tick()

    assert claims.count("jobs.Broken") == 3
    assert claims.count("jobs.Fine") == 1
    assert sorted(job["class"] for job in queued(app)) == ["jobs.Broken", "jobs.Fine"]


def test_start_publishes_the_schedule_and_replace_removes_stale_rows(
    make_app: MakeApp, make_ticker: MakeTicker, redis_client: redis.Redis,
) -> None:
    old = make_app()
    stale = old.periodic("*/5 * * * *", "jobs.Stale", args=[1])
    make_ticker(old).start()
    adding = make_app()
    kept = adding.periodic("0 9 * * * Europe/Berlin", "jobs.Kept", unique="until_executed",
                           queue="q")
    make_ticker(adding).start()
    schedule_key = keys_of(old).periodic_schedule
    assert set(redis_client.hkeys(schedule_key)) == {stale.pjid.encode(), kept.pjid.encode()}
    assert json.loads(redis_client.hget(schedule_key, kept.pjid) or "") == {
        "cron": "0 9 * * * Europe/Berlin", "class": "jobs.Kept", "retry": 0,
        "unique": "until_executed", "args": [], "queue": "q"}

    replacing = make_app()
    fresh = replacing.periodic("@hourly", "jobs.Fresh", replace=True)
    make_ticker(replacing).start()
    assert redis_client.hkeys(schedule_key) == [fresh.pjid.encode()]


def test_start_survives_an_unreachable_redis(
    make_app: MakeApp, make_ticker: MakeTicker,
) -> None:
    app = make_app(url="redis://127.0.0.1:1/0")
    app.periodic("* * * * *", "jobs.Any")
    ticker = make_ticker(app, ready=threading.Event())
    ticker.start()  # logs, does not raise
    ticker.stop()


def test_the_thread_waits_for_ready_and_does_not_fire_while_quiet(
    app: App, make_ticker: MakeTicker,
) -> None:
    app.periodic("* * * * * *", "jobs.EverySecond")
    ready = threading.Event()
    manager = StandInManager()
    manager.quiet()
    ticker = make_ticker(app, ready=ready, manager=manager, tick_interval=0.02,
                         clock=lambda: START)
    ticks = threading.Semaphore(0)
    real_tick = ticker.tick

    def counted_tick() -> None:
        real_tick()
        ticks.release()

    ticker.tick = counted_tick  # type: ignore[method-assign]
    ticker.start()
    assert not ticks.acquire(timeout=0.3)
    assert manager.quiet_checks == 0  # still waiting for the first orphan check

    ready.set()
    assert wait_for(lambda: manager.quiet_checks >= 3)  # looped, quiet each time
    assert queued(app) == []

    manager.unquiet()
    assert ticks.acquire(timeout=10)
    ticker.stop()
    assert [job["periodic_slot"] for job in queued(app)] == [START]


def test_a_ticker_without_entries_starts_no_thread(
    app: App, make_ticker: MakeTicker, redis_client: redis.Redis,
) -> None:
    def ticker_threads() -> int:
        return sum(1 for thread in threading.enumerate() if thread.name == "cogworker-ticker")

    before = ticker_threads()
    ticker = make_ticker(app)
    ticker.start()
    assert ticker.entries == []
    assert ticker_threads() == before
    assert not redis_client.exists(keys_of(app).periodic_schedule)
