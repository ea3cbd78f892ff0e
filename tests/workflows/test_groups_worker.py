"""Groups and chords with a real worker on a thread: results in the members' order, the
callback with the list, a dying member failing the chord, and checks at creation."""

from __future__ import annotations

import pytest

from cogworker.app import App
from cogworker.core.errors import JobCallError
from cogworker.workflows import WorkflowFailedError, chord, group
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

    with pytest.raises(JobCallError, match="step 2 of the group"):
        group(one.s(1), one.s())  # a member gets no previous result
    with pytest.raises(JobCallError, match="step 3 of the chord"):
        chord([one.s(1), one.s(2)], nothing.s())  # the callback must take the list
    chord([one.s(1)], nothing.si())
