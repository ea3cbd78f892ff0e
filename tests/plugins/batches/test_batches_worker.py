"""Batches with a real worker (on a thread): each callback's semantics, retries, deaths,
nesting, adding from inside a job, and the block's all-or-nothing push."""

from __future__ import annotations

from typing import Any

import pytest

import cogworker
from cogworker.app import App
from cogworker.core.broker import BATCHES
from cogworker.plugins.batches import BatchError
from helpers.threaded_worker import working
from plugins.batches.conftest import Ledger, until

COUNTS_KEYS = {"total", "pending", "succeeded", "failed", "dead"}


def callbacks(app: App, ledger: Ledger) -> tuple[Any, Any, Any]:
    @app.job(name="on_complete")
    def on_complete(bid: str, counts: dict[str, int], *extra: Any) -> None:
        ledger.add("complete", (bid, counts, extra))

    @app.job(name="on_success")
    def on_success(bid: str, counts: dict[str, int]) -> None:
        ledger.add("success", (bid, counts))

    @app.job(name="on_death")
    def on_death(bid: str, counts: dict[str, int]) -> None:
        ledger.add("death", (bid, counts))

    return on_complete, on_success, on_death


def test_complete_and_success_fire_once_with_the_counts_and_extra_args(
        app: App, ledger: Ledger) -> None:
    on_complete, on_success, on_death = callbacks(app, ledger)

    @app.job
    def work(n: int) -> None:
        ledger.add("ran", n)

    with app.batch("five", on_complete=(on_complete, 42, "x"), on_success=on_success,
                   on_death=on_death) as batch:
        for n in range(4):
            work.perform_async(n)
        work.perform_in(0.1, 4)
        assert app.broker.queues.size("default") == 0  # held until the block exits
    with working(app):
        ledger.wait_for(lambda led: led.of("complete") and led.of("success"))
    assert sorted(ledger.of("ran")) == [0, 1, 2, 3, 4]
    full = {"total": 5, "pending": 0, "succeeded": 5, "failed": 0, "dead": 0}
    assert ledger.of("complete") == [(batch.bid, full, (42, "x"))]
    assert ledger.of("success") == [(batch.bid, full)]
    assert ledger.of("death") == []
    info = app.batches.get(batch.bid)
    assert info is not None and info.state == "success" and info.description == "five"


def test_a_first_failure_completes_the_batch_and_its_retry_succeeds_it(
        app: App, ledger: Ledger) -> None:
    on_complete, on_success, _ = callbacks(app, ledger)

    @app.job(retry_in=lambda count, exc, job: 0.2)
    def flaky() -> None:
        job = cogworker.current_job().job
        ledger.add("attempt", job.get("retry_count", 0))
        if not job.get("retry_count"):
            raise RuntimeError("first attempt fails")

    with app.batch(on_complete=on_complete, on_success=on_success) as batch:
        flaky.perform_async()
    with working(app):
        ledger.wait_for(lambda led: led.of("success"))
    kinds = [kind for kind, _ in ledger.entries if kind in ("complete", "success", "attempt")]
    assert kinds == ["attempt", "complete", "attempt", "success"]
    (_, counts, _), = ledger.of("complete")
    assert counts == {"total": 1, "pending": 1, "succeeded": 0, "failed": 1, "dead": 0}
    assert ledger.of("success") == [(batch.bid, {"total": 1, "pending": 0, "succeeded": 1,
                                                 "failed": 0, "dead": 0})]


def test_a_death_fires_death_and_complete_and_never_success(app: App, ledger: Ledger) -> None:
    on_complete, on_success, on_death = callbacks(app, ledger)

    @app.job(retry=False)
    def doomed() -> None:
        raise RuntimeError("no retries")

    @app.job
    def fine() -> None:
        ledger.add("ran", "fine")

    with app.batch(on_complete=on_complete, on_success=on_success,
                   on_death=on_death) as batch:
        doomed.perform_async()
        fine.perform_async()
    with working(app):
        ledger.wait_for(lambda led: led.of("complete") and led.of("death"))
        assert app.batches.get(batch.bid) is not None
    assert ledger.of("success") == []
    (_, counts), = ledger.of("death")
    assert counts["dead"] == 1
    info = app.batches.get(batch.bid)
    assert info is not None and info.state == "complete"
    assert info.counts.dead == 1 and app.batches.jobs(batch.bid, "dead").total == 1


def test_a_child_batch_is_one_pending_unit_of_its_parent(app: App, ledger: Ledger) -> None:
    on_complete, on_success, _ = callbacks(app, ledger)

    @app.job
    def work(tag: str) -> None:
        ledger.add("ran", tag)

    with app.batch("parent", on_success=on_success) as parent:
        work.perform_async("p")
        with app.batch("child", on_complete=on_complete) as child:
            work.perform_async("c1")
            work.perform_async("c2")
        assert app.broker.queues.size("default") == 0  # the child waits for its parent
    assert child.parent == parent.bid
    with working(app):
        ledger.wait_for(lambda led: led.of("success"))
    assert next(e for e in ledger.entries if e[0] != "ran")[0] == "complete"  # child 1st
    assert ledger.of("success") == [(parent.bid, {"total": 2, "pending": 0, "succeeded": 2,
                                                  "failed": 0, "dead": 0})]
    members = app.batches.jobs(parent.bid)
    assert members.total == 2 and f"batch:{child.bid}" in members.items


def test_jobs_added_from_inside_a_batch_job_are_waited_for(app: App, ledger: Ledger) -> None:
    _, on_success, _ = callbacks(app, ledger)

    @app.job
    def leaf(n: int) -> None:
        ledger.add("leaf", n)

    @app.job
    def fan_out(n: int) -> None:
        batch = cogworker.current_batch()
        assert batch is not None
        with batch.jobs():
            for i in range(n):
                leaf.perform_async(i)
        batch.add(leaf, 99)
        ledger.add("fanned", batch.bid)

    with app.batch(on_success=on_success) as batch:
        fan_out.perform_async(3)
    with working(app):
        ledger.wait_for(lambda led: led.of("success"))
    assert sorted(ledger.of("leaf")) == [0, 1, 2, 99]
    assert ledger.of("fanned") == [batch.bid]
    assert ledger.of("success")[0][1]["total"] == 5
    assert ledger.entries[-1][0] == "success"


def test_a_batch_made_inside_a_batch_job_is_its_child(app: App, ledger: Ledger) -> None:
    on_complete, on_success, _ = callbacks(app, ledger)

    @app.job
    def leaf() -> None:
        ledger.add("leaf", None)

    @app.job
    def spawn() -> None:
        with app.batch("inner", on_complete=on_complete):
            leaf.perform_async()
            leaf.perform_async()

    with app.batch(on_success=on_success) as outer:
        spawn.perform_async()
    with working(app):
        ledger.wait_for(lambda led: led.of("success"))
    inner_bid = ledger.of("complete")[0][0]
    assert app.batches.get(inner_bid) is not None
    assert app.batches.get(inner_bid).parent == outer.bid  # type: ignore[union-attr]
    assert ledger.of("success")[0][1]["total"] == 2  # spawn and the inner batch


def test_an_exception_in_the_block_pushes_nothing(app: App, ledger: Ledger) -> None:
    _, on_success, _ = callbacks(app, ledger)

    @app.job
    def work() -> None: ...

    batch = app.batch(on_success=on_success)

    def build() -> None:
        with batch:
            work.perform_async()
            work.perform_in(60)
            raise ValueError("changed my mind")

    with pytest.raises(ValueError, match="changed my mind"):
        build()
    assert app.broker.queues.size("default") == 0
    assert app.broker.sets.size("schedule") == 0
    assert app.batches.get(batch.bid) is None
    with pytest.raises(BatchError, match="discarded already"):
        batch.add(work)


def test_callbacks_are_checked_before_anything_is_pushed(app: App) -> None:
    @app.job
    def takes_nothing() -> None: ...

    def not_a_job(bid: str, counts: dict[str, int]) -> None: ...

    with pytest.raises(BatchError, match="must be a job"):
        app.batch(on_success=not_a_job)
    with pytest.raises(BatchError, match="cannot take the arguments"):
        app.batch(on_complete=takes_nothing)
    with pytest.raises(BatchError, match="not a job registered"):
        app.batch(on_death="nowhere.job")
    with pytest.raises(BatchError, match="must be a job"):
        app.batch(on_success=42)
    assert app.broker.queues.names() == []


def test_cancelling_deletes_waiting_jobs_and_fires_nothing(app: App, ledger: Ledger) -> None:
    on_complete, _, _ = callbacks(app, ledger)

    @app.job
    def work() -> None:
        ledger.add("ran", None)

    with app.batch(on_complete=on_complete) as batch:
        for _ in range(3):
            work.perform_async()
        work.perform_in(3600)

    result = app.batches.cancel(batch.bid)

    assert (result.cancelled, result.deleted) == (True, 4)
    assert app.broker.queues.size("default") == 0 and app.broker.sets.size("schedule") == 0
    info = app.batches.get(batch.bid)
    assert info is not None and info.state == "cancelled"
    assert app.batches.cancel("nope").cancelled is False


def test_a_worker_skips_jobs_of_a_cancelled_batch_it_fetches(app: App, ledger: Ledger) -> None:
    on_complete, _, _ = callbacks(app, ledger)

    @app.job
    def work(n: int) -> None:
        ledger.add("ran", n)

    with app.batch(on_complete=on_complete) as cancelled:
        work.perform_async(1)
    with app.batch(on_complete=on_complete) as kept:
        work.perform_async(2)
    store = app.broker.extension(BATCHES)
    assert store is not None
    assert store.cancel(cancelled.bid, app.clock(), 60)  # its job stays queued: fetched later

    with working(app):
        ledger.wait_for(lambda led: led.of("complete"))
        until(lambda: app.broker.queues.size("default") == 0, "the queue drained")
    # the worker stopped cleanly: the job it fetched last was skipped (or ran) by now
    assert ledger.of("ran") == [2]
    assert [bid for bid, _, _ in ledger.of("complete")] == [kept.bid]


def test_a_job_dropped_past_its_expiry_counts_as_succeeded(app: App, ledger: Ledger) -> None:
    _, on_success, _ = callbacks(app, ledger)

    @app.job
    def late() -> None:
        ledger.add("ran", "late")

    with app.batch(on_success=on_success) as batch:
        late.set(expires_in=0.05).perform_async()
    until(lambda: app.clock() > batch._created_at + 0.2, "the job expired")
    with working(app):
        ledger.wait_for(lambda led: led.of("success"))
    assert ledger.of("ran") == []
