"""Groups and chords with a real worker on a thread: results in the members' order, the
callback with the list, a dying member failing the chord, and checks at creation."""

from __future__ import annotations

import pytest

from cogworker.app import App
from cogworker.core.errors import JobCallError
from cogworker.workflows import WorkflowError, WorkflowFailedError, chain, chord, group
from helpers.threaded_worker import WAIT, working


def test_a_group_gives_its_results_in_the_members_order(app: App) -> None:
    @app.job(name="square")
    def square(x: int) -> int:
        return x * x

    started = group(*(square.s(n) for n in range(6))).apply_async()

    with working(app):
        assert started.get(timeout=WAIT) == [0, 1, 4, 9, 16, 25]
    info = app.batches.get(started.bid)
    assert info is not None and info.counts.succeeded == 6


def test_a_chord_calls_back_once_with_every_result_in_order(app: App) -> None:
    calls: list[list[int]] = []

    @app.job(name="square")
    def square(x: int) -> int:
        return x * x

    @app.job(name="total")
    def total(values: list[int], offset: int) -> int:
        calls.append(values)
        return sum(values) + offset

    started = chord(group(*(square.s(n) for n in range(20))), total.s(offset=1000)).apply_async()

    with working(app):
        assert started.get(timeout=WAIT) == sum(n * n for n in range(20)) + 1000
    assert calls == [[n * n for n in range(20)]]


def test_a_member_that_dies_fails_the_chord_and_the_callback_never_runs(app: App) -> None:
    calls: list[object] = []

    @app.job(name="maybe", retry=False)
    def maybe(x: int) -> int:
        if x == 2:
            raise KeyError(x)
        return x

    @app.job(name="total")
    def total(values: list[int]) -> None:
        calls.append(values)

    started = chord([maybe.s(n) for n in range(4)], total.s()).apply_async()

    with working(app), pytest.raises(WorkflowFailedError) as failed:
        started.get(timeout=WAIT)
    assert failed.value.step == 2
    assert calls == []


def test_members_and_callbacks_are_checked_for_their_place(app: App) -> None:
    @app.job(name="one")
    def one(x: int) -> int:
        return x

    @app.job(name="nothing")
    def nothing() -> int:
        return 0

    half = group(one.s(1), one.s())  # fits inside a chain, where it gets a result
    with pytest.raises(JobCallError, match="step 2 of the group"):
        half.apply_async()  # alone, a member gets no previous result
    with pytest.raises(JobCallError, match="step 2 of the group"):
        chord(half, nothing.si())
    with pytest.raises(JobCallError, match="step 3 of the chord"):
        chord([one.s(1), one.s(2)], nothing.s())  # the callback must take the list
    chord([one.s(1)], nothing.si())


def test_a_group_inside_a_chain_gets_the_result_and_hands_its_list_on(app: App) -> None:
    @app.job(name="add")
    def add(x: int, y: int) -> int:
        return x + y

    @app.job(name="square")
    def square(x: int) -> int:
        return x * x

    @app.job(name="plus")
    def plus(x: int, y: int) -> int:
        return x + y

    @app.job(name="total")
    def total(values: list[int]) -> int:
        return sum(values)

    @app.job(name="double")
    def double(x: int) -> int:
        return 2 * x

    workflow = chain(add.s(1, 2), group(square.s(), plus.s(10), plus.si(0, 1)), total.s(),
                     double.s()).apply_async()
    ends_in_group = chain(add.s(1, 2), group(square.s(), square.s())).apply_async()

    with working(app):
        assert workflow.get(timeout=WAIT) == 2 * (9 + 13 + 1)
        assert ends_in_group.get(timeout=WAIT) == [9, 9]


def test_a_chain_refuses_a_group_first_and_checks_members_for_their_place(app: App) -> None:
    @app.job(name="one")
    def one(x: int) -> int:
        return x

    with pytest.raises(WorkflowError, match="after the first step, a group"):
        chain(group(one.s(1)), one.s())
    with pytest.raises(JobCallError, match="step 2 of the chain"):
        chain(one.s(1), group(one.s(), one.s(2)))  # one.s(2) would get 2 arguments
