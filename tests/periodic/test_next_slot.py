"""The ticker wakes at its entries' next due slot: an every-second entry fires every second
with the default tick interval (5 s), across three real processes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

import cogworker
from cogworker.core.periodic_types import PeriodicEntry
from cogworker.periodic.next_wake import PAST_SLOT, seconds_until_next_slot
from cogworker.redis.keys import KeySchema
from periodic.test_processes import Fleet, fired_slots


def _entry(cron: str) -> PeriodicEntry:
    app = cogworker.App(redis_url="redis://127.0.0.1:1/0")
    tick = app.job(name="Tick")(_noop)
    return app.periodic(cron, tick)


def _noop() -> None:
    """The job of the entries (never run here)."""


def test_the_sleep_ends_just_past_the_earliest_next_slot_and_never_beyond_the_cap() -> None:
    every_second, every_minute = _entry("* * * * * *"), _entry("* * * * *")
    now = 1_700_000_000.25
    assert seconds_until_next_slot([every_second], now, 5.0) == pytest.approx(0.75 + PAST_SLOT)
    assert seconds_until_next_slot([every_minute], now, 5.0) == 5.0
    at_minute = 1_700_000_039.5  # 0.5 s before a minute starts
    assert seconds_until_next_slot([every_minute, every_second], at_minute, 5.0) == \
        pytest.approx(0.5 + PAST_SLOT)
    assert seconds_until_next_slot([], now, 5.0) == 5.0


@pytest.mark.slow
def test_an_every_second_entry_fires_in_nearly_every_second_across_three_processes(
    tmp_path: Path, redis_url: str, namespace: str, redis_client: redis.Redis,
    keys: KeySchema,
) -> None:
    fleet = Fleet(tmp_path / "fleet", redis_url, namespace, sleep=0.0)
    del fleet.env["COGWORKER_PLUGIN_OPTIONS"]  # the default tick interval, no tuning
    try:
        fleet.start(3)
        first = int(time.time()) + 2  # every ticker is ready by then
        fleet.wait_for_slot(first + 25, timeout=60)
        fleet.stop()
    finally:
        fleet.close()

    fired = fired_slots(fleet, redis_client, keys)
    window = range(first, first + 25)
    fired_in = [slot for slot in window if slot in fired]
    twice = {slot: jids for slot, jids in fired.items() if len(jids) > 1}
    print(f"\nevery-second entry, 3 processes, default tick interval: fired in "
          f"{len(fired_in)} of {len(window)} seconds")
    assert twice == {}
    assert len(fired_in) >= 23
