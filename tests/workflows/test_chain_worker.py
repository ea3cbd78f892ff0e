"""Chains with a real worker on a thread: results passed on, the workflow's state and
result, a step that dies or returns something that is not JSON, and the results' TTL."""

from __future__ import annotations

import threading
import time

import pytest
import redis

import cogworker
from cogworker.app import App
from cogworker.core.errors import ConfigurationError
from cogworker.redis.keys import KeySchema
from cogworker.workflows import WorkflowError, WorkflowFailedError, chain
from helpers.threaded_worker import WAIT, working


def test_a_chain_of_three_passes_each_result_to_the_next_step(app: App) -> None:
    @app.job(name="add")
    def add(x: int, y: int) -> int:
        return x + y

    @app.job(name="double")
    def double(x: int) -> int:
        return 2 * x

    @app.job(name="describe")
    def describe(x: int, label: str) -> dict[str, object]:
        return {"label": label, "value": x}

    workflow = chain(add.s(1, 2), double.s(), describe.s(label="total")).apply_async()

    with working(app):
        assert workflow.get(timeout=WAIT) == {"label": "total", "value": 6}
    assert workflow.results() == [3, 6, {"label": "total", "value": 6}]
    record = workflow.state()
    assert record is not None
    assert (record.state, record.steps, record.finished) == ("succeeded", 3, 3)
    assert app.result(workflow.jids[1]).get(timeout=0) == 6


def test_an_si_step_does_not_take_the_previous_result(app: App) -> None:
    @app.job(name="one")
    def one() -> int:
        return 1

    @app.job(name="constant")
    def constant(value: str) -> str:
        return value

    workflow = chain(one.s(), constant.si("fixed")).apply_async()

    with working(app):
        assert workflow.get(timeout=WAIT) == "fixed"


def test_a_step_that_dies_stops_the_chain_at_that_step(app: App) -> None:
    ran: list[str] = []

    @app.job(name="first")
    def first() -> int:
        return 1

    @app.job(name="breaks", retry=False)
    def breaks(x: int) -> int:
        raise ValueError(f"cannot take {x}")

    @app.job(name="never")
    def never(x: int) -> None:
        ran.append("never")

    workflow = chain(first.s(), breaks.s(), never.s()).apply_async()

    with working(app), pytest.raises(WorkflowFailedError) as failed:
        workflow.get(timeout=WAIT)
    assert failed.value.step == 1
    assert "ValueError: cannot take 1" in str(failed.value)
    assert ran == []
    assert workflow.results() == [1, None, None]


def test_a_result_that_is_not_json_fails_the_workflow_clearly(app: App) -> None:
    @app.job(name="makes_set")
    def makes_set() -> object:
        return {1, 2}

    @app.job(name="after")
    def after(x: object) -> None:
        raise AssertionError("never runs")

    workflow = chain(makes_set.s(), after.s()).apply_async()

    with working(app), pytest.raises(WorkflowFailedError) as failed:
        workflow.get(timeout=WAIT)
    assert failed.value.step == 0
    assert "not JSON" in str(failed.value)
    assert workflow.results() == [None, None]


def test_results_and_the_workflow_record_expire_after_the_ttl(
        redis_url: str, namespace: str, redis_client: redis.Redis, keys: KeySchema) -> None:
    app = App(redis_url=redis_url, namespace=namespace, concurrency=1, timeout=1.0,
              poll_interval=0.2, plugin_options={"workflows": {"result_ttl": 120}})
    try:
        @app.job(name="value")
        def value() -> int:
            return 7

        workflow = chain(value.s()).apply_async()
        with working(app):
            assert workflow.get(timeout=WAIT) == 7
    finally:
        app.close()

    for key in (keys.result(workflow.jids[0]), keys.workflow(workflow.id)):
        assert 110_000 < redis_client.pttl(key) <= 120_000


def test_a_bad_result_ttl_is_refused_at_start_up(redis_url: str, namespace: str) -> None:
    app = App(redis_url=redis_url, namespace=namespace,
              plugin_options={"workflows": {"result_ttl": 0}})
    try:
        with pytest.raises(ConfigurationError, match=r"plugin_options\.workflows\.result_ttl"):
            app.hooks  # noqa: B018 -- configuring the plugins reads the options
    finally:
        app.close()


def test_a_chain_needs_the_workflows_plugin(redis_url: str, namespace: str) -> None:
    app = App(redis_url=redis_url, namespace=namespace, plugins=("no:workflows",))
    try:
        @app.job(name="value")
        def value() -> int:
            return 7

        with pytest.raises(WorkflowError, match="workflows plugin is not active"):
            chain(value.s()).apply_async()
    finally:
        app.close()


def test_a_step_cancelled_while_running_stops_the_chain_even_if_it_returns(app: App) -> None:
    ran: list[str] = []
    started = threading.Event()

    @app.job(name="first")
    def first() -> int:
        return 1

    @app.job(name="slow")
    def slow(x: int) -> int:
        started.set()
        job = cogworker.current_job()
        deadline = time.monotonic() + WAIT
        while not job.cancelled() and time.monotonic() < deadline:
            time.sleep(0.01)
        return x + 1  # told to stop, and returns a result anyway

    @app.job(name="never")
    def never(x: int) -> None:
        ran.append("never")

    workflow = chain(first.s(), slow.s(), never.s()).apply_async()
    with working(app):
        assert started.wait(WAIT)
        assert app.cancel(workflow.jids[1]).outcome.value == "signalled"
        with pytest.raises(WorkflowFailedError) as failed:
            workflow.get(timeout=WAIT)
    assert failed.value.step == 1
    assert "cancelled" in str(failed.value)
    assert ran == []
