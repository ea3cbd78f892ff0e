"""``broker.locks``: owner-checked locks with TTLs and bounded scans, on every broker."""

from __future__ import annotations

import pytest

from cogworker.core.broker import Broker, LockRecord
from contract.conftest import StoreTime


def test_acquire_takes_a_free_lock_only(broker: Broker) -> None:
    assert broker.locks.acquire("unique:a", "jid-1", 60) is True
    assert broker.locks.acquire("unique:a", "jid-2", 60) is False
    assert broker.locks.acquire("unique:a", "jid-1", 60) is False  # even for its owner
    assert broker.locks.owner("unique:a") == "jid-1"
    assert broker.locks.owner("unique:free") is None


def test_extend_is_for_the_owner_only(broker: Broker) -> None:
    broker.locks.acquire("unique:a", "jid-1", 60)

    assert broker.locks.extend("unique:a", "jid-1", 600) is True
    assert broker.locks.extend("unique:a", "jid-2", 1) is False
    assert broker.locks.extend("unique:free", "jid-1", 60) is False
    ttl = broker.locks.get(["unique:a"])["unique:a"].ttl
    assert ttl is not None and 60 < ttl <= 600


def test_extend_can_shorten(broker: Broker) -> None:
    broker.locks.acquire("unique:a", "jid-1", 600)

    assert broker.locks.extend("unique:a", "jid-1", 30) is True
    ttl = broker.locks.get(["unique:a"])["unique:a"].ttl
    assert ttl is not None and ttl <= 30


def test_retake_takes_or_refreshes_but_never_steals(broker: Broker) -> None:
    assert broker.locks.retake("periodic:running:p", "jid-1", 10) is True
    assert broker.locks.retake("periodic:running:p", "jid-1", 600) is True
    assert broker.locks.retake("periodic:running:p", "jid-2", 600) is False

    record = broker.locks.get(["periodic:running:p"])["periodic:running:p"]
    assert record.owner == "jid-1"
    assert record.ttl is not None and record.ttl > 10


def test_release_is_for_the_owner_only(broker: Broker) -> None:
    broker.locks.acquire("unique:a", "jid-1", 60)

    assert broker.locks.release("unique:a", "jid-2") is False
    assert broker.locks.owner("unique:a") == "jid-1"
    assert broker.locks.release("unique:a", "jid-1") is True
    assert broker.locks.owner("unique:a") is None
    assert broker.locks.release("unique:a", "jid-1") is False


def test_a_lock_expires_after_its_ttl(broker: Broker, store_time: StoreTime) -> None:
    broker.locks.acquire("unique:a", "jid-1", 1)

    store_time(1.5)

    assert broker.locks.owner("unique:a") is None
    assert broker.locks.acquire("unique:a", "jid-2", 60) is True


def test_get_reads_the_held_locks_of_several_names(broker: Broker) -> None:
    broker.locks.acquire("unique:a", "jid-1", 60)
    broker.locks.acquire("periodic:running:p", "jid-2", 60)

    found = broker.locks.get(["unique:a", "unique:free", "periodic:running:p"])

    assert {name: r.owner for name, r in found.items()} == {"unique:a": "jid-1",
                                                            "periodic:running:p": "jid-2"}
    assert found["unique:a"].name == "unique:a"
    assert broker.locks.get([]) == {}


def test_delete_removes_a_lock_whoever_holds_it(broker: Broker) -> None:
    broker.locks.acquire("unique:a", "jid-1", 60)

    assert broker.locks.delete("unique:a") is True
    assert broker.locks.delete("unique:a") is False
    assert broker.locks.owner("unique:a") is None


@pytest.mark.parametrize("call", [
    lambda b: b.locks.acquire("", "o", 1),
    lambda b: b.locks.extend("", "o", 1),
    lambda b: b.locks.retake("", "o", 1),
    lambda b: b.locks.release("", "o"),
    lambda b: b.locks.owner(""),
    lambda b: b.locks.delete(""),
])
def test_an_empty_lock_name_is_refused(broker: Broker, call: object) -> None:
    with pytest.raises(ValueError):
        call(broker)  # type: ignore[operator]


def scan_records(broker: Broker, prefix: str, contains: str = "",
                 limit: int = 2) -> list[LockRecord]:
    """Every lock a scan finds, step by step until its cursor is None."""
    records: list[LockRecord] = []
    cursor, steps = None, 0
    while True:
        page = broker.locks.scan(prefix, contains=contains, cursor=cursor, limit=limit)
        steps += 1
        assert len(page.locks) <= limit
        assert [r.name for r in page.locks] == sorted(r.name for r in page.locks)
        records += page.locks
        if page.next_cursor is None:
            return records
        cursor = page.next_cursor
        assert steps < 1000


def scan_all(broker: Broker, prefix: str, contains: str = "", limit: int = 2) -> list[str]:
    return [record.name for record in scan_records(broker, prefix, contains, limit)]


def test_a_scan_returns_every_lock_under_its_prefix(broker: Broker) -> None:
    wanted = {f"unique:{n:02}" for n in range(7)}
    for name in wanted | {"periodic:running:p", "uniqueness:x"}:
        broker.locks.acquire(name, "o", 60)

    found = scan_all(broker, "unique:")

    assert set(found) == wanted


def test_a_scan_filters_on_the_name_after_the_prefix(broker: Broker) -> None:
    for name in ("unique:Report-1", "unique:report-2", "unique:invoice", "report:unique:x"):
        broker.locks.acquire(name, "o", 60)

    assert sorted(scan_all(broker, "unique:", contains="REPORT")) == ["unique:Report-1",
                                                                      "unique:report-2"]
    assert scan_all(broker, "unique:", contains="unique") == []


def test_a_scan_record_has_owner_and_ttl(broker: Broker) -> None:
    broker.locks.acquire("unique:a", "jid-1", 60)

    [record] = scan_records(broker, "unique:", limit=10)

    assert (record.name, record.owner) == ("unique:a", "jid-1")
    assert record.ttl is not None and 0 < record.ttl <= 60


def test_a_scan_needs_a_limit(broker: Broker) -> None:
    with pytest.raises(ValueError):
        broker.locks.scan("unique:", limit=0)
