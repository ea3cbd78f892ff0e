"""StartBudget: exactly ``limit`` jobs let through, ``on_spent`` called once, at the last."""

from __future__ import annotations

import threading

import pytest

from cogworker.worker.start_budget import StartBudget


def test_lets_limit_jobs_through_and_calls_on_spent_at_the_last() -> None:
    calls: list[int] = []
    budget = StartBudget(3, lambda: calls.append(budget.started))
    assert [budget.take() for _ in range(5)] == [True, True, True, False, False]
    assert calls == [3]  # called once, as the third job was let through
    assert budget.started == 3


def test_threads_racing_for_the_last_starts_get_exactly_limit() -> None:
    calls: list[int] = []
    budget = StartBudget(50, lambda: calls.append(threading.get_ident()))
    results: list[bool] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def take_many() -> None:
        barrier.wait()
        taken = [budget.take() for _ in range(20)]
        with lock:
            results.extend(taken)

    threads = [threading.Thread(target=take_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 50
    assert len(calls) == 1


def test_a_budget_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 job, not 0"):
        StartBudget(0, lambda: None)
