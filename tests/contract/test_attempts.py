"""``broker.extension(ATTEMPTS)``: failure trails, on every broker."""

from __future__ import annotations

import pytest

from cogworker.core.broker import ATTEMPTS, Attempt, AttemptStore, Broker
from contract.conftest import StoreTime


@pytest.fixture
def store(broker: Broker) -> AttemptStore:
    found = broker.extension(ATTEMPTS)
    assert found is not None, f"the {broker.name} broker has no attempts facet"
    return found


def failure(number: int, outcome: str = "retrying") -> Attempt:
    return Attempt(number, 1_700_000_000.0 + number, outcome,  # type: ignore[arg-type]
                   "ValueError", f"boom {number}")


def test_a_trail_reads_oldest_first(store: AttemptStore) -> None:
    for number in (1, 2, 3):
        store.append("j1", failure(number, "dead" if number == 3 else "retrying"))

    assert store.trail("j1") == [failure(1), failure(2), failure(3, "dead")]
    assert store.trail("j1", limit=2) == [failure(2), failure(3, "dead")]


def test_only_the_newest_entries_are_kept(store: AttemptStore) -> None:
    for number in range(1, 8):
        store.append("j1", failure(number), keep=5)

    assert [entry.attempt for entry in store.trail("j1")] == [3, 4, 5, 6, 7]


def test_a_job_that_never_failed_has_no_trail(store: AttemptStore) -> None:
    assert store.trail("never") == []


def test_clear_forgets_the_trails_it_names(store: AttemptStore) -> None:
    store.append("j1", failure(1))
    store.append("j2", failure(1))

    assert store.clear(["j1", "missing"]) == 1
    assert store.trail("j1") == []
    assert store.trail("j2") == [failure(1)]
    assert store.clear([]) == 0


def test_a_trail_expires_after_its_ttl(store: AttemptStore, store_time: StoreTime) -> None:
    store.append("short", failure(1), ttl=1)
    store.append("long", failure(1))
    store_time(2.1)

    assert store.trail("short") == []
    assert store.trail("long") == [failure(1)]


def test_bad_arguments_are_refused(store: AttemptStore) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        store.append("j1", failure(1), keep=0)
    with pytest.raises(ValueError, match="at least 1"):
        store.trail("j1", limit=0)
