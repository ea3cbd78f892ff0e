"""The in-process time limit: an exception raised in the job's own thread, never outside it."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from cogworker.core.errors import JobTimeoutError
from cogworker.worker.time_limits import TimeLimits, job_time_limit, run_limited

T = TypeVar("T")


def _spin(limits: TimeLimits, limit: float, label: str) -> None:
    """Five seconds of short sleeps under ``limit``."""
    with limits.sync_limit(limit, label):
        for _ in range(500):
            time.sleep(0.01)


def test_a_sync_block_over_its_limit_raises_job_timeout_error_in_its_own_thread() -> None:
    message = re.escape("Demo jid=1 ran past its time limit of 0.2 s")
    with pytest.raises(JobTimeoutError, match=message):
        _spin(TimeLimits(), 0.2, "Demo jid=1")


def test_a_block_that_ends_in_time_is_never_interrupted_afterwards() -> None:
    limits = TimeLimits()
    for _ in range(20):
        try:
            with limits.sync_limit(0.05, "Quick"):
                time.sleep(0.04)  # ends close to the limit: a late exception must not escape
        except JobTimeoutError:
            pass  # a loaded machine overran the block: raised inside it, as it must be
        for _ in range(10):
            time.sleep(0.01)  # outside the block: nothing may be raised here


def test_other_threads_are_not_touched() -> None:
    limits = TimeLimits()
    finished = threading.Event()

    def bystander() -> None:
        for _ in range(60):
            time.sleep(0.01)
        finished.set()

    thread = threading.Thread(target=bystander)
    thread.start()
    with pytest.raises(JobTimeoutError):
        _spin(limits, 0.1, "Mine")
    thread.join()
    assert finished.is_set()


def _run_alone(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on a loop of its own thread (as the worker's async runner does),
    whatever loop this test thread may have."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_an_async_job_over_its_limit_is_cancelled() -> None:
    cancelled = []

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    with pytest.raises(JobTimeoutError, match=re.escape("Slow ran past its time limit of 0.1 s")):
        _run_alone(run_limited(slow(), 0.1, "Slow"))
    assert cancelled == [True]


def test_an_async_jobs_own_timeout_error_stays_its_own() -> None:
    async def own() -> None:
        raise TimeoutError("the job's own")

    with pytest.raises(TimeoutError, match="the job's own"):
        _run_alone(run_limited(own(), 5, "Own"))


def test_the_limit_comes_from_the_payload_then_the_definition_then_the_setting() -> None:
    assert job_time_limit({"time_limit": 3}, 10, {"time_limit": 5}) == 3
    assert job_time_limit({}, 10, {"time_limit": 5}) == 5
    assert job_time_limit({}, 10) == 10
    assert job_time_limit({}, 0) is None
    assert job_time_limit({"time_limit": True}, 0) is None
