"""``broker.extension(CANCELLATIONS)``: cancelled jids with their expiry, the atomic removal
of a waiting job, and the announcements, on every broker."""

from __future__ import annotations

import time

import pytest

from cogworker.core.broker import CANCELLATIONS, Broker, CancellationStore, WaitingEntry
from contract.payloads import jid_of, job


def store_of(broker: Broker) -> CancellationStore:
    store = broker.extension(CANCELLATIONS)
    assert store is not None
    return store


def test_a_cancellation_lives_until_its_expiry(broker: Broker) -> None:
    store, now = store_of(broker), time.time()
    assert store.cancel("a1", now + 60, now) is False  # nothing to remove
    store.cancel("b2", now + 5, now)

    assert store.is_cancelled("a1", now)
    assert store.active(now) == {"a1": now + 60, "b2": now + 5}
    assert store.active(now + 10) == {"a1": now + 60}
    assert not store.is_cancelled("b2", now + 10)
    assert not store.is_cancelled("zz", now)


def test_recording_drops_the_cancellations_that_expired(broker: Broker) -> None:
    store, now = store_of(broker), time.time()
    store.cancel("old", now + 1, now)
    store.cancel("new", now + 100, now + 50)

    assert store.active(0.0) == {"new": now + 100}


def test_a_queued_job_is_removed_with_its_cancellation_recorded(broker: Broker) -> None:
    store, now = store_of(broker), time.time()
    target, other = job("mail"), job("mail")
    broker.queues.store([("mail", target), ("mail", other)], [])

    assert store.cancel(jid_of(target), now + 60, now, WaitingEntry("queue", target, "mail"))
    assert broker.queues.page("mail", 0, 10) == [other]
    assert store.is_cancelled(jid_of(target), now)
    # gone already: the record is kept, nothing else is removed
    assert not store.cancel(jid_of(target), now + 60, now,
                            WaitingEntry("queue", target, "mail"))
    assert broker.queues.size("mail") == 1


@pytest.mark.parametrize("place", ["schedule", "retry"])
def test_a_scheduled_or_retrying_job_is_removed_from_its_set(broker: Broker,
                                                             place: str) -> None:
    store, now = store_of(broker), time.time()
    target, other = job(), job()
    broker.sets.file(place, now + 300, target)  # type: ignore[arg-type]
    broker.sets.file(place, now + 300, other)  # type: ignore[arg-type]

    assert store.cancel(jid_of(target), now + 60, now,
                        WaitingEntry(place, target))  # type: ignore[arg-type]
    assert [entry.raw for entry in broker.sets.page(place, 0, 10)] == [other]  # type: ignore[arg-type]
    assert store.is_cancelled(jid_of(target), now)


def test_a_withdrawn_cancellation_is_forgotten(broker: Broker) -> None:
    store, now = store_of(broker), time.time()
    store.cancel("a1", now + 60, now)

    assert store.withdraw("a1") is True
    assert store.withdraw("a1") is False
    assert store.active(now) == {}


def test_every_cancel_is_announced_to_the_subscribers(broker: Broker) -> None:
    store, now = store_of(broker), time.time()
    with store.subscribe() as subscription:
        store.cancel("a1", now + 60, now)
        store.cancel("b2", now + 60, now)
        heard = [subscription.get(5.0), subscription.get(5.0)]
    assert heard == ["a1", "b2"]


def test_bad_arguments_are_refused(broker: Broker) -> None:
    store = store_of(broker)
    with pytest.raises(ValueError, match="non-empty string"):
        store.cancel("", 1.0, 0.0)
    with pytest.raises(ValueError, match="needs the queue's name"):
        WaitingEntry("queue", "{}")
    with pytest.raises(ValueError, match="not in 'dead'"):
        WaitingEntry("dead", "{}")  # type: ignore[arg-type]
