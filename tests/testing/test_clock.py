"""The test clock: scheduled jobs, retry back-off and cron slots, without sleeping."""

from __future__ import annotations

from testing.conftest import RunExample


def test_scheduled_jobs_wait_for_the_clock(run_example: RunExample) -> None:
    result = run_example('''
import datetime as dt

import pytest

import example
from cogworker.core.errors import EmptyQueueError
from cogworker.testing import TestingError
from example import send

START = dt.datetime(2031, 5, 1, 9, 30, tzinfo=dt.timezone.utc)


def test_perform_in_and_perform_at_read_the_frozen_clock(cogworker_fake):
    cogworker_fake.freeze(at=START)
    send.perform_in(90, "in")
    send.perform_at(START + dt.timedelta(hours=1), "at")
    send.perform_async("now")

    ats = [job.get("at") for job in send.jobs]
    assert ats == [START.timestamp() + 90, START.timestamp() + 3600, None]
    assert send.jobs[2]["enqueued_at"] == send.jobs[2]["created_at"] == START.timestamp()

    assert send.drain() == 1
    cogworker_fake.advance(89.5)
    with pytest.raises(EmptyQueueError, match="advance"):
        send.perform_one()
    cogworker_fake.advance(0.5)
    assert send.perform_one() == "sent in"
    cogworker_fake.advance(dt.timedelta(hours=1))
    assert send.drain() == 1
    assert [entry[1] for entry in example.log] == ["now", "in", "at"]


def test_without_a_frozen_clock_delays_are_ignored(cogworker_fake):
    send.perform_in(dt.timedelta(days=30), "much later")

    assert send.drain() == 1


def test_freeze_as_a_context_manager_restores_real_time(cogworker_fake):
    with cogworker_fake.freeze(at=START):
        assert cogworker_fake.now() == START.timestamp()
        with cogworker_fake.freeze(at=0):
            assert cogworker_fake.now() == 0
        assert cogworker_fake.now() == START.timestamp()
    assert not cogworker_fake.frozen
    assert abs(cogworker_fake.now() - dt.datetime.now().timestamp()) < 60


def test_advance_needs_a_frozen_clock_going_forward(cogworker_fake):
    with pytest.raises(TestingError, match="not frozen"):
        cogworker_fake.advance(1)
    cogworker_fake.freeze()
    with pytest.raises(TestingError, match="only moves forward"):
        cogworker_fake.advance(-1)


def test_a_unique_for_window_ends_with_the_test_clock(cogworker_fake):
    cogworker_fake.freeze()
    assert example.ping.perform_async("db") is not None
    example.ping.drain()

    assert example.ping.perform_async("db") is None  # a window lock only expires
    cogworker_fake.advance(59)
    assert example.ping.perform_async("db") is None
    cogworker_fake.advance(1)
    assert example.ping.perform_async("db") is not None


def test_the_fixture_unfreezes_the_clock_after_a_test(cogworker_app):
    assert not cogworker_app.testing.frozen
    assert cogworker_app.clock is __import__("time").time
''')
    result.assert_outcomes(passed=6)


def test_retries_follow_the_back_off(run_example: RunExample) -> None:
    result = run_example('''
import pytest

import example
from example import Report, flaky, picky


def test_retry_is_recorded_at_now_plus_retry_in(cogworker_fake):
    cogworker_fake.freeze(at=1_900_000_000)
    picky.perform_async("value")

    with pytest.raises(ValueError):
        picky.drain()
    [retry] = picky.jobs
    assert retry["at"] == 1_900_000_010
    assert retry["retry_count"] == 1 and retry["failed_at"] == 1_900_000_000

    cogworker_fake.advance(9)
    assert picky.drain() == 0
    cogworker_fake.advance(1)
    with pytest.raises(ValueError):
        picky.drain()
    assert picky.jobs[0]["at"] == 1_900_000_030  # 10 + 20: second retry after 20 s
    assert picky.jobs[0]["failed_at"] == 1_900_000_000  # the first failure's time is kept


def test_default_back_off_and_then_success(cogworker_fake):
    cogworker_fake.freeze()
    Report.perform_async(4)
    original = Report.perform

    def fail_once(self, account):
        Report.perform = original
        raise TimeoutError("slow")

    Report.perform = fail_once
    try:
        with pytest.raises(TimeoutError):
            Report.drain()
    finally:
        Report.perform = original
    wait = Report.jobs[0]["at"] - cogworker_fake.now()
    assert 16 <= wait <= 16 + 29 * 2  # 1**4 + 15 + rand(30) * 2
    cogworker_fake.advance(wait)
    assert Report.perform_one() == 8


def test_no_retries_left_means_dead_and_death_handlers(cogworker_fake):
    cogworker_fake.freeze()
    flaky.perform_async(1)

    with pytest.raises(ConnectionError):
        flaky.drain()
    cogworker_fake.advance(3600)
    with pytest.raises(ConnectionError):
        flaky.drain()

    assert flaky.jobs == []
    [dead] = cogworker_fake.dead
    assert dead["retry_count"] == 2 and dead["error_message"] == "down 1"
    assert example.log == [("exhausted", [1], "down 1"),
                           ("died", "example.flaky", "ConnectionError")]


def test_retry_in_can_kill_or_discard(cogworker_fake):
    cogworker_fake.freeze()
    picky.perform_async("index")
    picky.perform_async("key")

    with pytest.raises(IndexError):
        picky.perform_one()
    with pytest.raises(KeyError):
        picky.perform_one()

    assert picky.jobs == []
    assert [job["args"] for job in cogworker_fake.dead] == [["index"]]
    assert example.log == [("died", "example.picky", "IndexError")]
''')
    result.assert_outcomes(passed=4)


def test_cron_slots_fire_once_each(run_example: RunExample) -> None:
    result = run_example('''
import datetime as dt

import example
from example import import_feed, nightly

UTC = dt.timezone.utc


def test_every_slot_crossed_records_one_job(cogworker_fake):
    cogworker_fake.freeze(at=dt.datetime(2031, 1, 1, 2, 0, tzinfo=UTC))

    jids = cogworker_fake.advance(dt.timedelta(days=2, hours=1))

    slots = [job["periodic_slot"] for job in nightly.jobs]
    assert slots == [int(dt.datetime(2031, 1, day, 3, 0, tzinfo=UTC).timestamp())
                     for day in (1, 2, 3)]
    assert [job["created_at"] for job in nightly.jobs] == slots
    assert {job["jid"] for job in nightly.jobs} <= set(jids)
    assert nightly.jobs[0]["retry"] == 0 and nightly.jobs[0]["periodic_pjid"]
    assert cogworker_fake.drain_all() >= 3
    assert example.log.count(("nightly",)) == 3


def test_a_slot_exactly_at_the_frozen_time_does_not_fire(cogworker_fake):
    cogworker_fake.freeze(at=dt.datetime(2031, 1, 1, 3, 0, tzinfo=UTC))

    cogworker_fake.advance(dt.timedelta(hours=23, minutes=59))
    assert nightly.jobs == []
    cogworker_fake.advance(60)
    assert len(nightly.jobs) == 1


def test_until_executed_entry_waits_for_its_previous_run(cogworker_fake):
    cogworker_fake.freeze(at=dt.datetime(2031, 1, 1, 0, 5, tzinfo=UTC))

    cogworker_fake.advance(dt.timedelta(minutes=30))  # 00:10, 00:20, 00:30
    assert [job["periodic_slot"] % 3600 for job in import_feed.jobs] == [600]
    assert import_feed.jobs[0]["periodic_until_executed"] is True

    import_feed.drain()
    cogworker_fake.advance(dt.timedelta(minutes=10))  # 00:40
    assert [job["periodic_slot"] % 3600 for job in import_feed.jobs] == [2400]


def test_cron_jobs_run_at_once_in_inline_mode(cogworker_inline):
    cogworker_inline.freeze(at=dt.datetime(2031, 1, 1, 2, 0, tzinfo=UTC))

    cogworker_inline.advance(dt.timedelta(hours=1))

    assert ("nightly",) in example.log
    assert cogworker_inline.jobs == {}
''')
    result.assert_outcomes(passed=4)
