"""A batch's callbacks in the fake and inline test modes: recorded like any push in fake
mode (``drain_all`` runs them), run in the caller's thread in inline mode."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from cogworker.app import App
from cogworker.core.broker import BATCHES
from cogworker.core.broker.batches import SettleItem
from cogworker.testing.memory_broker import MemoryBroker
from contract.test_batches import QUEUE, TTL, kinds, pushed, seal

Jobs = tuple[list[tuple[Any, ...]], Any, Any, Any]
"""What each test runs: ``(log, row, fragile, notify)``; every job appends to ``log``."""


@pytest.fixture
def batch_jobs(app: App) -> Jobs:
    log: list[tuple[Any, ...]] = []

    @app.job(name="row")
    def row(n: int) -> None:
        log.append(("row", n))

    @app.job(name="fragile", retry=False)
    def fragile(n: int) -> None:
        log.append(("fragile", n))
        raise ValueError(f"row {n} is broken")

    @app.job(name="notify")
    def notify(bid: str, counts: dict[str, int], who: str) -> None:
        log.append(("notify", bid, counts["succeeded"], counts["total"], who))

    return log, row, fragile, notify


def test_fake_mode_records_the_callback_and_drain_all_runs_it(
    app: App, batch_jobs: Jobs,
) -> None:
    log, row, _fragile, notify = batch_jobs
    with app.testing.fake():
        with app.batch("rows", on_success=(notify, "ops")) as batch:
            row.perform_async(1)
            row.perform_async(2)
        assert app.testing.jobs_of(notify) == []  # nothing ran: nothing fired yet

        assert app.testing.drain_all() == 3  # two rows, then the callback they fired
        assert log == [("row", 1), ("row", 2), ("notify", batch.bid, 2, 2, "ops")]
        record = app.batches.get(batch.bid)
        assert record is not None and "success" in record.fired


def test_fake_mode_the_callback_waits_in_the_recorded_jobs(
    app: App, batch_jobs: Jobs,
) -> None:
    log, row, _fragile, notify = batch_jobs
    with app.testing.fake():
        with app.batch("rows", on_complete=(notify, "ops")) as batch:
            row.perform_async(1)
        app.testing.perform_one(row)

        [recorded] = app.testing.jobs_of(notify)
        assert recorded["args"][0] == batch.bid and recorded["args"][2] == "ops"
        assert log == [("row", 1)]


def test_inline_mode_runs_the_callback_when_the_batch_is_sealed(
    app: App, batch_jobs: Jobs,
) -> None:
    log, row, _fragile, notify = batch_jobs
    with app.testing.inline():
        with app.batch("rows", on_success=(notify, "ops")) as batch:
            row.perform_async(1)
            row.perform_async(2)
            assert log == []  # held until the block ends, as always
        assert log == [("row", 1), ("row", 2), ("notify", batch.bid, 2, 2, "ops")]
        assert app.testing.jobs == {}


def test_inline_mode_an_empty_batch_fires_at_its_seal(app: App, batch_jobs: Jobs) -> None:
    log, _row, _fragile, notify = batch_jobs
    with app.testing.inline():
        batch = app.batch("nothing yet", on_complete=(notify, "ops"))
        batch.commit()  # sealed with no member: nothing to wait for, so it completes
        assert log == [("notify", batch.bid, 0, 0, "ops")]


def test_inline_mode_a_callback_fired_inside_a_job_runs_once_that_job_is_done(
    app: App, batch_jobs: Jobs,
) -> None:
    log, row, _fragile, notify = batch_jobs

    @app.job(name="spawn")
    def spawn() -> None:  # a batch job that builds a batch of its own, nested in the first
        log.append(("spawn", "start"))
        with app.batch("child", on_success=(notify, "child")) as child:
            row.perform_async(1)
        log.append(("spawn", "end", child.bid))

    with app.testing.inline():
        with app.batch("parent", on_success=(notify, "parent")) as parent:
            spawn.perform_async()
        child_bid = log[2][2]
        assert log[:3] == [("spawn", "start"), ("row", 1), ("spawn", "end", child_bid)]
        # The child's seal fired its callback while spawn ran: it ran after spawn ended.
        assert log[3] == ("notify", child_bid, 1, 1, "child")
        assert [entry[1] for entry in log[4:]] == [parent.bid]
        assert log[4][-1] == "parent"


def test_inline_mode_a_failing_member_reaches_the_caller_and_the_batch_is_not_sealed(
    app: App, batch_jobs: Jobs,
) -> None:
    log, row, fragile, notify = batch_jobs
    made: list[Any] = []

    def the_block() -> None:
        with app.batch("rows", on_complete=(notify, "ops")) as batch:
            made.append(batch)
            row.perform_async(1)
            fragile.perform_async(3)

    with app.testing.inline():
        with pytest.raises(ValueError, match="row 3 is broken"):
            the_block()
        assert log == [("row", 1), ("fragile", 3)]  # the seal came after: nothing fired
        assert app.batches.get(made[0].bid) is None


def test_fake_mode_a_dead_member_fires_the_death_callback(
    app: App, batch_jobs: Jobs,
) -> None:
    log, row, fragile, notify = batch_jobs
    with app.testing.fake():
        with app.batch("rows", on_death=(notify, "ops")) as batch:
            row.perform_async(1)
            fragile.perform_async(3)
        with pytest.raises(ValueError, match="row 3 is broken"):
            app.testing.drain_all()  # fragile dies (no retry) and fires on_death
        assert [job["jid"] for job in app.testing.dead] == [batch.jids[1]]
        assert app.testing.drain_all() == 1
        assert log[-1] == ("notify", batch.bid, 1, 2, "ops")


def lock_is_free(lock: Any) -> bool:
    """Whether another thread can take ``lock`` now (the caller does not hold it)."""
    taken: list[bool] = []

    def take() -> None:
        got = lock.acquire(timeout=2)
        taken.append(got)
        if got:
            lock.release()

    other = threading.Thread(target=take)
    other.start()
    other.join()
    return taken == [True]


def test_the_memory_brokers_own_pushes_go_to_the_route_outside_its_lock_else_to_the_queue(
) -> None:
    broker = MemoryBroker()
    store = broker.extension(BATCHES)
    assert store is not None
    routed: list[tuple[str, str, bool]] = []

    def route(queue: str, raw: str) -> None:
        routed.append((queue, json.loads(raw)["class"], lock_is_free(broker.state.lock)))

    broker.state.route_broker_pushes = route
    seal(store, "b1", ["j1"], "success")
    store.settle("b1", "j1", "success", time.time(), TTL, QUEUE)
    assert routed == [(QUEUE, "on_success", True)]
    assert pushed(broker) == []

    broker.state.route_broker_pushes = None  # as the memory plugin runs it: onto the queue
    seal(store, "b2", ["j2"], "success")
    store.settle_many([SettleItem("b2", "j2", "success", QUEUE)], time.time(), TTL)
    assert kinds(broker) == ["success"] and len(routed) == 1
