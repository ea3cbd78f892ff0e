"""What the worker's per-job path keeps doing after issue 23's cuts (session 5): the current
job is set around ``perform`` and reset however it ends, a time limit still interrupts a
limited job, and an ``async def`` job (or a sync job returning an awaitable) still runs on
the event loop as the current job."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import cogworker
from cogworker.core.broker import UnitOfWork
from cogworker.core.current_job import running_job
from cogworker.core.middleware import ServerChain, for_jobs_with
from cogworker.core.payload import encode
from engine.engine_app import job_runner, memory_app


def _work(job_class: str, *args: Any, **options: Any) -> UnitOfWork:
    job = {"class": job_class, "queue": "default", "args": list(args), "jid": "a" * 24,
           "retry": 0, "created_at": time.time(), **options}
    return UnitOfWork("default", encode(job))


@pytest.fixture
def app() -> cogworker.App:
    return memory_app()[0]


def test_the_current_job_is_set_during_perform_and_reset_after_success_and_failure(
        app: cogworker.App) -> None:
    seen: list[str] = []

    @app.job
    def look(fail: bool) -> None:
        seen.append(cogworker.current_job().jid)
        if fail:
            raise ValueError("boom")

    runner = job_runner(app)[0]
    assert runner.run(_work(look.name, False)).kind == "ack"
    assert running_job() is None
    runner.run(_work(look.name, True))
    assert running_job() is None
    assert seen == ["a" * 24, "a" * 24]


def test_a_limited_job_is_still_interrupted_at_its_limit(app: cogworker.App) -> None:
    @app.job
    def spin() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pass

    settlement = job_runner(app)[0].run(_work(spin.name, time_limit=0.05))
    assert settlement.kind == "ack"  # filed into dead by the runner: retry is 0
    (entry,) = app.broker.sets.page("dead", 0, 1, newest_first=False)
    assert "JobTimeoutError" in entry.raw and "time limit of 0.05 s" in entry.raw
    assert running_job() is None


def test_an_awaitable_result_runs_on_the_event_loop_as_the_current_job(
        app: cogworker.App) -> None:
    seen: list[str] = []

    async def later() -> str:
        seen.append(cogworker.current_job().jid)
        return "done"

    @app.job
    def hands_back() -> object:
        return later()

    @app.job
    async def native() -> None:
        await asyncio.sleep(0)
        seen.append(cogworker.current_job().jid)

    runner = job_runner(app)[0]
    assert runner.run(_work(hands_back.name)).kind == "ack"
    assert runner.run(_work(native.name)).kind == "ack"
    assert seen == ["a" * 24, "a" * 24]
    assert running_job() is None


def _recording(label: str, seen: list[str]) -> Any:
    def middleware(ctx: Any, call_next: Any) -> object:
        seen.append(label)
        return call_next()

    return middleware


def test_a_keyed_middleware_runs_only_for_jobs_holding_its_key_in_chain_order(
        app: cogworker.App) -> None:
    seen: list[str] = []
    app.server_middleware.extend([
        _recording("outer", seen),
        for_jobs_with("tenant", "region")(_recording("keyed", seen)),
        _recording("inner", seen),
    ])

    @app.job
    def plain() -> None:
        seen.append("perform")

    runner = job_runner(app)[0]
    runner.run(_work(plain.name))
    assert seen == ["outer", "inner", "perform"]
    seen.clear()
    runner.run(_work(plain.name, region="eu"))
    assert seen == ["outer", "keyed", "inner", "perform"]


def test_server_chain_keeps_unmarked_middleware_and_orders_keyed_ones_in_place() -> None:
    def first(ctx: Any, call_next: Any) -> object:
        return call_next()

    @for_jobs_with("bid")
    def batch(ctx: Any, call_next: Any) -> object:
        return call_next()

    @for_jobs_with("workflow")
    def step(ctx: Any, call_next: Any) -> object:
        return call_next()

    chain = ServerChain([first, batch, step])
    assert chain.for_job({"class": "C", "queue": "q"}) == [first]
    assert chain.for_job({"workflow": "w", "class": "C"}) == [first, step]
    assert chain.for_job({"workflow": "w", "bid": "b"}) == [first, batch, step]
    assert ServerChain([first]).for_job({"bid": "b"}) == [first]


def test_for_jobs_with_needs_a_key() -> None:
    with pytest.raises(ValueError, match="at least one payload key"):
        for_jobs_with()
