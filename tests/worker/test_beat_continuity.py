"""Beat continuity: when this process's own beats broke off, and when they have settled
enough for its orphan check to judge others (on a fake clock)."""

from __future__ import annotations

import pytest

from cogworker.worker.beat_continuity import BeatContinuity

INTERVAL = 5.0
TTL = 20.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def continuity(clock: Clock) -> BeatContinuity:
    return BeatContinuity(INTERVAL, TTL, clock=clock)


def beat(continuity: BeatContinuity, clock: Clock, *, taking: float = 0.01) -> None:
    started = clock.now
    clock.now += taking
    continuity.beat_succeeded(started)


def beat_for(continuity: BeatContinuity, clock: Clock, seconds: float) -> None:
    """Beat every interval for ``seconds``."""
    end = clock.now + seconds
    while clock.now < end:
        clock.now += INTERVAL
        beat(continuity, clock)


def test_nothing_is_judged_before_the_first_beat(continuity: BeatContinuity) -> None:
    assert continuity.settle == 15.0
    assert not continuity.settled()
    assert not continuity.presence_expected()


def test_a_process_whose_first_beat_worked_at_once_judges_at_once(
    continuity: BeatContinuity, clock: Clock,
) -> None:
    beat(continuity, clock)
    assert continuity.settled()
    beat_for(continuity, clock, 60)
    assert continuity.settled()


def test_failed_beats_before_the_first_success_mean_an_outage_to_wait_out(
    continuity: BeatContinuity, clock: Clock,
) -> None:
    continuity.beat_failed()  # the broker was away at start-up
    clock.now += 1
    beat(continuity, clock)
    assert not continuity.settled()
    beat_for(continuity, clock, 10)
    assert not continuity.settled()
    beat_for(continuity, clock, 5)
    assert continuity.steady_for() >= continuity.settle
    assert continuity.settled()


def test_a_failed_beat_unsettles_until_three_intervals_of_beats_followed(
    continuity: BeatContinuity, clock: Clock,
) -> None:
    beat(continuity, clock)
    beat_for(continuity, clock, 30)
    continuity.beat_failed()
    assert not continuity.settled()
    clock.now += INTERVAL
    beat(continuity, clock)
    assert not continuity.settled()
    beat_for(continuity, clock, 15)
    assert continuity.settled()


def test_a_beat_long_after_the_last_one_is_a_break(
    continuity: BeatContinuity, clock: Clock,
) -> None:
    """This process was paused (SIGSTOP, a held GIL) and every beat came late."""
    beat(continuity, clock)
    clock.now += 3 * INTERVAL + 1
    assert not continuity.settled()  # overdue: a break under way, before any beat says so
    beat(continuity, clock)
    assert not continuity.settled()
    beat_for(continuity, clock, 15)
    assert continuity.settled()


def test_one_beat_call_that_took_too_long_is_a_break(
    continuity: BeatContinuity, clock: Clock,
) -> None:
    """A frozen broker that answered the beat only when it woke."""
    beat(continuity, clock)
    clock.now += INTERVAL
    beat(continuity, clock, taking=60)
    assert not continuity.settled()


def test_a_late_beat_under_load_is_no_break(continuity: BeatContinuity, clock: Clock) -> None:
    beat(continuity, clock)
    clock.now += 2.5 * INTERVAL
    beat(continuity, clock, taking=2)
    assert continuity.settled()


def test_presence_is_expected_until_the_ttl_of_the_last_write_runs_out(
    continuity: BeatContinuity, clock: Clock,
) -> None:
    beat(continuity, clock)
    clock.now += TTL - 1.5
    assert continuity.presence_expected()
    clock.now += 1
    assert not continuity.presence_expected()


def test_a_lost_presence_record_is_a_break(continuity: BeatContinuity, clock: Clock) -> None:
    beat(continuity, clock)
    continuity.presence_missing()
    assert not continuity.settled()
    beat_for(continuity, clock, 15)  # the settle counts from the first beat after the break
    assert not continuity.settled()
    beat_for(continuity, clock, 5)
    assert continuity.settled()
