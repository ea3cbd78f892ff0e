"""``broker.extension(STATUS)``: job statuses, on every broker."""

from __future__ import annotations

import json
import time

import pytest

from cogworker.core.broker import STATUS, Broker, StatusRecord, StatusStore
from cogworker.core.broker.status import READ_LIMIT
from contract.conftest import StoreTime

TTL = 1800.0


@pytest.fixture
def store(broker: Broker) -> StatusStore:
    found = broker.extension(STATUS)
    assert found is not None, f"the {broker.name} broker has no status facet"
    return found


def record(jid: str, state: str = "working", at: float | None = None, ttl: float = TTL,
           **fields: object) -> StatusRecord:
    now = time.time() if at is None else at
    return StatusRecord(jid=jid, state=state, updated_at=now,  # type: ignore[arg-type]
                        expires_at=now + ttl, **fields)  # type: ignore[arg-type]


def test_a_written_status_reads_back_whole(store: StatusStore) -> None:
    written = record("j1", "working", class_name="Report", queue="low", pct=42.5,
                     message="page 3", fields={"rows": "17"})
    store.write([written])

    assert store.read(["j1"], TTL, time.time()) == {"j1": written}


def test_unknown_jids_are_absent(store: StatusStore) -> None:
    store.write([record("known")])

    assert set(store.read(["known", "unknown"], TTL, time.time())) == {"known"}
    assert store.read([], TTL, time.time()) == {}


def test_a_later_write_replaces_the_record(store: StatusStore) -> None:
    now = time.time()
    store.write([record("j1", "queued", at=now - 1)])
    store.write([record("j1", "complete", at=now)])

    assert store.read(["j1"], TTL, now)["j1"].state == "complete"


def test_the_last_record_of_a_jid_in_one_batch_wins(store: StatusStore) -> None:
    now = time.time()
    store.write([record("j1", "working", at=now), record("j1", "complete", at=now),
                 record("j2", "failed", at=now, error_class="ValueError")])

    found = store.read(["j1", "j2"], TTL, now)
    assert found["j1"].state == "complete"
    assert found["j2"].error_class == "ValueError"


def test_the_newest_record_wins_across_time_buckets(store: StatusStore) -> None:
    now = time.time()
    store.write([record("j1", "queued", at=now - 300)])  # five minutes earlier
    store.write([record("j1", "working", at=now)])

    assert store.read(["j1"], TTL, now)["j1"].state == "working"


def test_a_record_expires_after_its_ttl(store: StatusStore, store_time: StoreTime) -> None:
    store.write([record("short", ttl=1.0), record("long", ttl=TTL)])
    store_time(1.5)

    assert set(store.read(["short", "long"], TTL, time.time() + 1.5)) == {"long"}


def test_a_read_is_bounded(store: StatusStore) -> None:
    with pytest.raises(ValueError, match="at most"):
        store.read([f"j{i}" for i in range(READ_LIMIT + 1)], TTL, time.time())


def test_recovery_reports_the_jobs_it_requeued_by_holder(broker: Broker, holder: str) -> None:
    """What the ``orphans_recovered`` hook passes on, so ``status`` can say ``queued``."""
    from contract.payloads import job
    from contract.test_recovery import DEAD_AT_ONCE, RECENT_BEATS_COUNT, holding

    first, second = job("q"), job("q")
    holding(broker, holder, first, second)

    report = broker.held.recover_orphans("me", DEAD_AT_ONCE)

    assert sorted(report.requeued[holder]) == sorted([first, second])
    assert sorted(j["jid"] for j in report.requeued_jobs(holder)) == sorted(
        json.loads(raw)["jid"] for raw in (first, second))
    broker.queues.clear("q")
    holding(broker, holder, first)
    assert broker.held.recover_process(holder, RECENT_BEATS_COUNT).requeued == {holder: [first]}
