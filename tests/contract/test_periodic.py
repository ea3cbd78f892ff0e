"""``broker.periodic``: the cron records and the slot claim, on every broker."""

from __future__ import annotations

from cogworker.core.broker import Broker, running_lock_name
from cogworker.core.periodic_types import ClaimOutcome, ClaimResult, PeriodicEntry

NIGHTLY = PeriodicEntry("0 3 * * *", "Nightly", args=[1, "x"], retry=3,
                        unique="until_executed", queue="cron")
HOURLY = PeriodicEntry("0 * * * *", "Hourly")
SLOT = 1_700_000_000


def claim(broker: Broker, slot: int, jid: str = "jid-1", *,
          until_executed: bool = False) -> ClaimResult:
    return broker.periodic.claim_slot("p1", slot, jid, until_executed=until_executed,
                                      slot_lock_ttl=120, running_ttl=600)


def test_the_published_schedule_reads_back(broker: Broker) -> None:
    broker.periodic.publish([NIGHTLY], replace=True)
    broker.periodic.publish([HOURLY], replace=False)

    assert broker.periodic.schedule() == {NIGHTLY.pjid: NIGHTLY, HOURLY.pjid: HOURLY}

    broker.periodic.publish([HOURLY], replace=True)
    assert broker.periodic.schedule() == {HOURLY.pjid: HOURLY}


def test_disabling_says_whether_it_changed_something(broker: Broker) -> None:
    assert broker.periodic.set_disabled("p1", True) is True
    assert broker.periodic.set_disabled("p1", True) is False
    assert broker.periodic.is_disabled("p1") is True
    assert broker.periodic.disabled() == frozenset({"p1"})
    assert broker.periodic.set_disabled("p1", False) is True
    assert broker.periodic.set_disabled("p1", False) is False
    assert broker.periodic.is_disabled("p1") is False


def test_last_slots_of_entries_never_claimed_are_none(broker: Broker) -> None:
    assert broker.periodic.last_slots(["p1", "p2"]) == {"p1": None, "p2": None}
    assert broker.periodic.last_slots([]) == {}


def test_priming_sets_a_baseline_only_once(broker: Broker) -> None:
    assert broker.periodic.prime_last_slot("p1", SLOT) is True
    assert broker.periodic.prime_last_slot("p1", SLOT + 60) is False
    assert broker.periodic.last_slots(["p1"]) == {"p1": SLOT}


def test_a_slot_is_won_once_and_only_later_slots_follow(broker: Broker) -> None:
    assert claim(broker, SLOT) == ClaimResult(ClaimOutcome.WON, None)
    assert claim(broker, SLOT).outcome is ClaimOutcome.LOST
    assert claim(broker, SLOT - 60).outcome is ClaimOutcome.LOST
    assert claim(broker, SLOT + 60) == ClaimResult(ClaimOutcome.WON, SLOT)
    assert broker.periodic.last_slots(["p1"]) == {"p1": SLOT + 60}


def test_a_slot_not_later_than_the_primed_baseline_is_lost(broker: Broker) -> None:
    broker.periodic.prime_last_slot("p1", SLOT)

    assert claim(broker, SLOT).outcome is ClaimOutcome.LOST
    assert claim(broker, SLOT + 60) == ClaimResult(ClaimOutcome.WON, SLOT)


def test_an_until_executed_claim_takes_the_running_lock(broker: Broker) -> None:
    result = claim(broker, SLOT, "jid-run", until_executed=True)

    assert result.outcome is ClaimOutcome.WON
    record = broker.locks.get([running_lock_name("p1")])[running_lock_name("p1")]
    assert record.owner == "jid-run"
    assert record.ttl is not None and 120 < record.ttl <= 600


def test_a_held_running_lock_blocks_the_next_slot(broker: Broker) -> None:
    claim(broker, SLOT, "jid-run", until_executed=True)

    assert claim(broker, SLOT + 60, "jid-next", until_executed=True).outcome is \
        ClaimOutcome.BLOCKED
    assert broker.periodic.last_slots(["p1"]) == {"p1": SLOT}  # nothing written
    assert broker.locks.owner(running_lock_name("p1")) == "jid-run"
    assert claim(broker, SLOT + 60, "jid-other").outcome is ClaimOutcome.WON


def test_once_the_run_released_its_lock_the_entry_fires_again(broker: Broker) -> None:
    claim(broker, SLOT, "jid-run", until_executed=True)
    broker.locks.release(running_lock_name("p1"), "jid-run")

    assert claim(broker, SLOT + 60, "jid-next", until_executed=True).outcome is \
        ClaimOutcome.WON


def test_a_rollback_lets_the_slot_be_claimed_again(broker: Broker) -> None:
    claim(broker, SLOT, "jid-1")
    won = claim(broker, SLOT + 60, "jid-2", until_executed=True)

    assert broker.periodic.rollback_claim("p1", SLOT + 60, won.previous_slot, "jid-2") is True

    assert broker.periodic.last_slots(["p1"]) == {"p1": SLOT}
    assert broker.locks.owner(running_lock_name("p1")) is None
    assert claim(broker, SLOT + 60, "jid-3").outcome is ClaimOutcome.WON


def test_a_rollback_without_a_previous_slot_goes_one_second_back(broker: Broker) -> None:
    claim(broker, SLOT)

    assert broker.periodic.rollback_claim("p1", SLOT, None, "jid-1") is True
    assert broker.periodic.last_slots(["p1"]) == {"p1": SLOT - 1}
    assert broker.periodic.prime_last_slot("p1", SLOT) is False  # the baseline stays


def test_a_rollback_never_undoes_a_later_claim(broker: Broker) -> None:
    claim(broker, SLOT, "jid-1", until_executed=True)
    broker.locks.release(running_lock_name("p1"), "jid-1")
    claim(broker, SLOT + 60, "jid-2", until_executed=True)

    assert broker.periodic.rollback_claim("p1", SLOT, None, "jid-1") is False

    assert broker.periodic.last_slots(["p1"]) == {"p1": SLOT + 60}
    assert broker.locks.owner(running_lock_name("p1")) == "jid-2"  # not the rolled-back jid's
    assert claim(broker, SLOT).outcome is ClaimOutcome.LOST  # older than the last slot
