"""``StatusBuffer``: a second's changes coalesced into one write, kept when it fails."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from cogworker.core.broker import StatusRecord
from cogworker.core.errors import BrokerUnavailableError
from cogworker.plugins.status.buffer import StatusBuffer


class RecordingStore:
    def __init__(self) -> None:
        self.writes: list[list[StatusRecord]] = []
        self.failing = False

    def write(self, records: Sequence[StatusRecord]) -> None:
        if self.failing:
            raise BrokerUnavailableError("Redis is away")
        self.writes.append(list(records))

    def read(self, jids: Sequence[str], max_ttl: float,
             now: float) -> dict[str, StatusRecord]:
        raise AssertionError("not read here")


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> RecordingStore:
    return RecordingStore()


@pytest.fixture
def buffer(store: RecordingStore) -> Iterator[StatusBuffer]:
    made = StatusBuffer(store, ttl=60.0, clock=Clock())
    made.start(interval=3600.0)  # flushed by hand below
    yield made
    made.stop()


JOB = {"jid": "j1", "class": "Report", "queue": "low"}


def test_a_job_that_starts_and_ends_within_an_interval_is_written_once(
        buffer: StatusBuffer, store: RecordingStore) -> None:
    buffer.record(JOB, "working", fresh=True)
    buffer.record(JOB, None, fields={"rows": "3"})
    buffer.record(JOB, "complete")
    buffer.flush()
    buffer.flush()  # nothing new: no write

    assert len(store.writes) == 1
    [record] = store.writes[0]
    assert (record.jid, record.state, record.class_name, record.queue, dict(record.fields),
            record.expires_at) == ("j1", "complete", "Report", "low", {"rows": "3"}, 1060.0)


def test_a_running_jobs_entry_survives_the_flush_and_merges_later_changes(
        buffer: StatusBuffer, store: RecordingStore) -> None:
    buffer.record(JOB, "working", fresh=True, pct=10.0, message="start")
    buffer.flush()
    buffer.record(JOB, None, fields={"a": "1"})
    buffer.flush()

    assert [(r.state, r.pct, r.message, dict(r.fields)) for [r] in store.writes] == [
        ("working", 10.0, "start", {}), ("working", 10.0, "start", {"a": "1"})]


def test_a_failed_write_is_kept_and_a_newer_change_wins(buffer: StatusBuffer,
                                                        store: RecordingStore) -> None:
    buffer.record(JOB, "working", fresh=True)
    buffer.record({"jid": "j2"}, "queued", fresh=True)
    store.failing = True
    with pytest.raises(BrokerUnavailableError):
        buffer.flush()
    store.failing = False
    buffer.record(JOB, "complete")
    buffer.flush()

    assert sorted((r.jid, r.state) for r in store.writes[0]) == [("j1", "complete"),
                                                                 ("j2", "queued")]


def test_outside_a_worker_each_change_is_written_at_once(store: RecordingStore) -> None:
    direct = StatusBuffer(store, ttl=60.0, clock=Clock())
    direct.record(JOB, "failed", error_class="ValueError")

    assert [(r.state, r.error_class) for [r] in store.writes] == [("failed", "ValueError")]
    direct.flush_now()  # an outage is logged, never raised
    store.failing = True
    direct.record(JOB, "failed")


def test_a_stopped_buffer_writes_what_it_had_and_ignores_late_changes(
        buffer: StatusBuffer, store: RecordingStore) -> None:
    buffer.record(JOB, "interrupted")
    buffer.stop()
    buffer.record(JOB, "complete")  # a job thread that finished after the stop

    assert [[(r.jid, r.state) for r in batch] for batch in store.writes] == [
        [("j1", "interrupted")]]
