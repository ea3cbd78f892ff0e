"""Cron expressions: syntax, UTC by default, time zones right across DST, invalid ones."""

from __future__ import annotations

import datetime as dt
import time
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogworker.core.errors import PeriodicEntryError
from cogworker.periodic.cron import CronExpressionError, next_fire, parse_cron, previous_fire
from cogworker.periodic.registration import make_entry

BERLIN = ZoneInfo("Europe/Berlin")
UTC = dt.timezone.utc


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
       zone: dt.tzinfo = UTC) -> float:
    return dt.datetime(year, month, day, hour, minute, second, tzinfo=zone).timestamp()


def fires_between(expression: str, start: float, end: float) -> list[int]:
    """Every slot in (start, end], walking next_fire."""
    slots: list[int] = []
    now = start
    while True:
        upcoming = next_fire(expression, now)
        if upcoming > end:
            return slots
        slots.append(int(upcoming))
        now = upcoming


def utc_text(slot: float) -> str:
    return dt.datetime.fromtimestamp(slot, UTC).strftime("%H:%M:%S")


# syntax ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "now", "expected_next"),
    [
        ("*/5 * * * *", at(2024, 5, 1, 10, 3), at(2024, 5, 1, 10, 5)),
        ("0 9 * * mon-fri", at(2024, 5, 3, 10, 0), at(2024, 5, 6, 9, 0)),  # Fri → Mon
        ("0 0 1 jan,jul *", at(2024, 2, 1), at(2024, 7, 1)),
        ("15,45 8-10/2 * * *", at(2024, 5, 1, 8, 50), at(2024, 5, 1, 10, 15)),
        ("*/15 * * * * *", at(2024, 5, 1, 10, 0, 7), at(2024, 5, 1, 10, 0, 15)),  # seconds
        ("30 0 0 * * *", at(2024, 5, 1, 0, 0, 31), at(2024, 5, 2, 0, 0, 30)),
        ("@hourly", at(2024, 5, 1, 10, 3), at(2024, 5, 1, 11, 0)),
        ("@daily", at(2024, 5, 1, 10, 3), at(2024, 5, 2)),
        ("@weekly", at(2024, 5, 1), at(2024, 5, 5)),  # Sunday
        ("@monthly Europe/Berlin", at(2024, 5, 1, 12), at(2024, 6, 1, zone=BERLIN)),
        ("0 9 * * * Europe/Berlin", at(2024, 5, 1, 6), at(2024, 5, 1, 9, zone=BERLIN)),
        ("0 9 * * * UTC", at(2024, 5, 1, 6), at(2024, 5, 1, 9)),
        ("0 */20 9 * * * America/New_York", at(2024, 5, 1, 12),
         at(2024, 5, 1, 9, 0, zone=ZoneInfo("America/New_York"))),
    ],
)
def test_expressions_fire_when_expected(expression: str, now: float,
                                        expected_next: float) -> None:
    assert next_fire(expression, now) == expected_next
    assert previous_fire(expression, expected_next) == expected_next
    assert previous_fire(expression, expected_next + 0.5) == expected_next
    assert previous_fire(expression, expected_next - 1) < expected_next


def test_a_slot_is_an_integer_epoch_second_and_includes_now() -> None:
    slot = previous_fire("* * * * *", at(2024, 5, 1, 10, 3, 59) + 0.999)
    assert slot == at(2024, 5, 1, 10, 3)
    assert isinstance(slot, int)


def test_without_a_zone_the_expression_is_utc_whatever_the_machine_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = at(2024, 5, 1, 9)
    try:
        for zone in ("Europe/Berlin", "America/Los_Angeles", "Asia/Kolkata"):
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            assert next_fire("0 9 * * *", at(2024, 5, 1, 0)) == expected
            assert previous_fire("0 9 * * *", expected + 1) == expected
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_trailing_zone_is_parsed_off_the_fields() -> None:
    schedule = parse_cron("0 9 * * 1-5 Europe/Berlin")
    assert schedule.fields == "0 9 * * 1-5"
    assert schedule.zone_name == "Europe/Berlin"
    assert not schedule.with_seconds
    assert parse_cron("*/2 * * * * *").with_seconds
    assert parse_cron("0 9 * * *").zone_name == "UTC"


# daylight saving (Europe/Berlin, 2024: forward on 31 March 02:00, back on 27 October 03:00)


def test_spring_forward_day_a_skipped_time_fires_once_right_after_the_gap() -> None:
    slots = fires_between("30 2 * * * Europe/Berlin", at(2024, 3, 29, 12), at(2024, 4, 1, 12))
    # 30 March 02:30 CET; 31 March 02:30 does not exist → 03:00 CEST; 1 April 02:30 CEST.
    assert slots == [at(2024, 3, 30, 2, 30, zone=BERLIN), at(2024, 3, 31, 3, 0, zone=BERLIN),
                     at(2024, 4, 1, 2, 30, zone=BERLIN)]
    assert [utc_text(s) for s in slots] == ["01:30:00", "01:00:00", "00:30:00"]


def test_spring_forward_day_every_existing_half_hour_fires_once() -> None:
    slots = fires_between("*/30 * * * * Europe/Berlin", at(2024, 3, 30, 23, 10),
                          at(2024, 3, 31, 3, 10))
    local = [dt.datetime.fromtimestamp(s, BERLIN).strftime("%H:%M") for s in slots]
    # 02:00 and 02:30 do not exist that night: they collapse into the 03:00 run.
    assert local == ["00:30", "01:00", "01:30", "03:00", "03:30", "04:00", "04:30", "05:00"]
    assert len(set(slots)) == len(slots)


def test_fall_back_day_a_repeated_time_fires_once_at_its_first_occurrence() -> None:
    slots = fires_between("30 2 * * * Europe/Berlin", at(2024, 10, 25, 12), at(2024, 10, 28, 12))
    assert [utc_text(s) for s in slots] == ["00:30:00", "00:30:00", "01:30:00"]
    assert slots[1] == at(2024, 10, 27, 2, 30, zone=BERLIN)  # 02:30 CEST, the first one
    assert len(set(slots)) == 3


def test_fall_back_day_the_repeated_hour_is_not_fired_twice() -> None:
    slots = fires_between("*/30 * * * * Europe/Berlin", at(2024, 10, 26, 23, 10),
                          at(2024, 10, 27, 3, 10))
    local = [dt.datetime.fromtimestamp(s, BERLIN).strftime("%H:%M%z") for s in slots]
    assert local == ["01:30+0200", "02:00+0200", "02:30+0200", "03:00+0100", "03:30+0100",
                     "04:00+0100"]


@pytest.mark.parametrize(
    ("start", "end"),
    [(at(2024, 3, 30, 22), at(2024, 3, 31, 4)), (at(2024, 10, 26, 22), at(2024, 10, 27, 4))],
)
@pytest.mark.parametrize("expression", ["*/30 * * * * Europe/Berlin", "30 2 * * * Europe/Berlin",
                                         "0 */10 * * * * Europe/Berlin"])
def test_previous_fire_agrees_with_next_fire_every_minute_across_dst(
    expression: str, start: float, end: float,
) -> None:
    begin, finish = start, end
    slots = fires_between(expression, begin - 86400, finish)
    for now in range(int(begin), int(finish), 37):
        expected = max(s for s in slots if s <= now)
        assert previous_fire(expression, now) == expected, utc_text(now)
        later = [s for s in slots if s > now]
        if later:
            assert next_fire(expression, now) == later[0]


@settings(max_examples=200, deadline=None)
@given(
    now=st.floats(min_value=1_500_000_000, max_value=2_000_000_000),
    expression=st.sampled_from(["*/7 * * * *", "0 9 * * mon-fri Europe/Berlin", "@daily",
                                "30 2 * * * America/Santiago", "*/20 * * * * *",
                                "0 0 29 2 *", "15 3 * * sun Australia/Lord_Howe"]),
)
def test_previous_fire_is_the_latest_slot_up_to_now(now: float, expression: str) -> None:
    slot = previous_fire(expression, now)
    assert slot <= now
    assert next_fire(expression, slot) > now  # nothing fires between the slot and now
    assert previous_fire(expression, slot) == slot


# invalid expressions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("", "empty"),
        ("* * *", "has 3 fields"),
        ("* * * * * * *", "has 7 fields"),
        ("61 * * * *", "not a valid cron expression"),
        ("*/0 * * * *", "not a valid cron expression"),
        ("0 9 * * mon-fry", "not a valid cron expression"),
        ("0 9 * * * Europe/Berln", "unknown time zone 'Europe/Berln'"),
        ("@hourly Mars/Olympus", "unknown time zone"),
        ("@fortnightly", "unknown cron alias"),
        ("0 0 31 2 *", "never fires"),
    ],
)
def test_an_invalid_expression_is_an_error_at_registration_naming_entry_and_problem(
    expression: str, reason: str,
) -> None:
    with pytest.raises(PeriodicEntryError) as caught:
        make_entry(expression, "reports.daily")
    message = str(caught.value)
    assert reason in message
    assert repr(expression) in message
    assert "'reports.daily'" in message
    assert caught.value.cron == expression


def test_parse_errors_are_value_errors_without_entry_context() -> None:
    with pytest.raises(CronExpressionError, match="has 4 fields"):
        parse_cron("1 2 3 4")
