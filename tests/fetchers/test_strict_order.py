"""Strict queue order (``strict_queue_order``, ``cogworker run --strict``): the first
non-empty queue is always drained first, by both built-in fetchers."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from cogworker.app import App
from cogworker.core.errors import ConfigurationError
from cogworker.core.settings import Settings
from cogworker.fetchers.weighted import fetch_order
from cogworker.testing import InProcessWorker


def test_strict_order_is_the_listed_order_every_time() -> None:
    rng = random.Random(7)
    queues = ["critical", "default", "low"]
    assert {tuple(fetch_order(queues, rng, strict=True)) for _ in range(50)} == {
        ("critical", "default", "low")}
    assert len({tuple(fetch_order(queues, rng)) for _ in range(50)}) > 1  # weighted shuffles


def test_weights_are_refused_with_strict_order() -> None:
    with pytest.raises(ConfigurationError, match="each queue listed once with strict"):
        Settings(queues=("critical", "critical", "low"), strict_queue_order=True)
    assert Settings(queues=("critical", "low"), strict_queue_order=True).strict_queue_order


@pytest.fixture(params=["reliable", "basic"])
def app(request: pytest.FixtureRequest, redis_url: str, namespace: str) -> Iterator[App]:
    application = App(redis_url=redis_url, namespace=namespace, fetch=request.param,
                      concurrency=1, queues=("critical", "default", "low"),
                      strict_queue_order=True)
    try:
        yield application
    finally:
        application.close()


def test_a_worker_drains_the_queues_in_the_order_listed(app: App) -> None:
    ran: list[str] = []

    @app.job
    def record(label: str) -> None:
        ran.append(label)

    for n in range(4):
        record.set(queue="low").perform_async(f"low-{n}")
    for n in range(4):
        record.set(queue="default").perform_async(f"default-{n}")
    for n in range(4):
        record.set(queue="critical").perform_async(f"critical-{n}")

    assert InProcessWorker(app).run_until_idle(timeout=20) == 12
    assert [label.split("-")[0] for label in ran] == (
        ["critical"] * 4 + ["default"] * 4 + ["low"] * 4)
