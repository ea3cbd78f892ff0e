"""Workflows in the fake and inline test modes: a finished step's next push is handled as
a push of the mode (recorded in fake mode, run in the caller's thread in inline mode), and a
workflow may be the first thing a fresh app does."""

from __future__ import annotations

import pytest

from cogworker.app import App
from cogworker.core.job import JobFunction
from cogworker.workflows import chain, chord, group

Steps = tuple[list[str], JobFunction[[int, int], int], JobFunction[[list[int], str], str]]


@pytest.fixture
def steps(app: App) -> Steps:
    log: list[str] = []

    @app.job(name="add")
    def add(a: int, b: int) -> int:
        log.append(f"add {a} {b}")
        return a + b

    @app.job(name="total")
    def total(values: list[int], title: str) -> str:
        log.append(f"total {values}")
        return f"{title}: {sum(values)}"

    return log, add, total


def test_fake_mode_records_each_next_step_and_drain_all_runs_the_chain(
    app: App, steps: Steps,
) -> None:
    log, add, _total = steps
    with app.testing.fake():  # the workflow is the app's first call: nothing built yet
        run = chain(add.s(1, 2), add.s(10), add.s(100)).apply_async()
        assert [job["args"] for job in app.testing.jobs_of(add)] == [[1, 2]]
        app.testing.perform_one(add)
        assert [job["args"] for job in app.testing.jobs_of(add)] == [[3, 10]]
        assert app.testing.drain_all() == 2
        assert run.get(timeout=0) == 113
    assert log == ["add 1 2", "add 3 10", "add 13 100"]


def test_inline_mode_runs_the_whole_chain_before_apply_async_returns(
    app: App, steps: Steps,
) -> None:
    log, add, _total = steps
    with app.testing.inline():
        run = chain(add.s(1, 2), add.s(10)).apply_async()
        assert log == ["add 1 2", "add 3 10"]
        assert run.get(timeout=0) == 13


@pytest.mark.parametrize("mode", ["fake", "inline"])
def test_a_chord_collects_its_members_results_in_both_modes(
    app: App, steps: Steps, mode: str,
) -> None:
    log, add, total = steps
    with app.testing.fake() if mode == "fake" else app.testing.inline():
        run = chord(group(add.s(1, 1), add.s(2, 2)), total.s(title="sum")).apply_async()
        if mode == "fake":
            app.testing.drain_all()
        assert run.get(timeout=0) == "sum: 6"
    assert log[-1] == "total [2, 4]"
