"""``broker.processes``: presence, running work and remote control, on every broker."""

from __future__ import annotations

import pytest

from cogworker.core.broker import Broker, RunningJob, WorkRecord
from contract.conftest import StoreTime
from contract.payloads import job

INFO = {"hostname": "box", "pid": 42, "concurrency": 5, "queues": ["q"]}


def beat(broker: Broker, identity: str, *, holds_jobs: bool = False, ttl: float = 60.0,
         busy: int = 0, quiet: bool = False) -> None:
    broker.processes.beat(identity, INFO, busy, quiet, ["q", "mail"], ttl, holds_jobs)


def work(queue: str = "q", run_at: float = 100.0) -> WorkRecord:
    return WorkRecord(queue, {"class": "Work", "args": [1], "jid": "j1", "queue": queue}, run_at)


def test_a_beat_makes_a_process_live(broker: Broker, holder: str) -> None:
    beat(broker, holder, busy=3, quiet=True)

    [record] = broker.processes.live()

    assert (record.identity, record.busy, record.quiet) == (holder, 3, True)
    assert record.info == INFO
    assert record.last_beat is None  # it holds no jobs
    assert record.expires_in is not None and 0 < record.expires_in <= 60
    got = broker.processes.get(holder)
    assert got is not None and (got.identity, got.info, got.busy) == (holder, INFO, 3)
    assert broker.processes.get(holder + "-unknown") is None


def test_a_beat_registers_and_declares_its_queues(broker: Broker, holder: str) -> None:
    beat(broker, holder)

    assert broker.queues.names() == ["mail", "q"]


def test_a_holder_beat_stamps_its_last_beat_on_the_store_clock(broker: Broker,
                                                               holder: str) -> None:
    before = broker.server_time()
    beat(broker, holder, holds_jobs=True)

    last_beat = broker.processes.live()[0].last_beat

    assert last_beat is not None
    assert before - 1 <= last_beat <= broker.server_time()


def test_live_lists_processes_by_identity(broker: Broker) -> None:
    for identity in ("b:1", "a:1", "c:1"):
        beat(broker, identity)

    assert [r.identity for r in broker.processes.live()] == ["a:1", "b:1", "c:1"]


def test_presence_goes_by_itself_when_beats_stop(broker: Broker, holder: str,
                                                 store_time: StoreTime) -> None:
    beat(broker, holder, ttl=1.0)

    store_time(1.5)

    assert broker.processes.get(holder) is None
    assert broker.processes.live() == []


def test_remove_ends_a_process_that_holds_nothing(broker: Broker, holder: str) -> None:
    beat(broker, holder, holds_jobs=True)
    broker.processes.set_work(holder, "t1", work())

    broker.processes.remove(holder)

    assert broker.processes.live() == []
    assert broker.processes.work(holder) == []
    assert broker.processes.is_dead(holder, 3600.0) is True  # no last beat left


def test_remove_keeps_the_last_beat_while_jobs_are_held(broker: Broker, holder: str) -> None:
    beat(broker, holder, holds_jobs=True)
    broker.queues.store([("q", job("q"))], [])
    broker.held.claim(holder, ["q"], 1)

    broker.processes.remove(holder)

    assert broker.processes.get(holder) is None
    assert broker.processes.is_dead(holder, 3600.0) is False
    assert broker.processes.is_dead(holder, 0.0) is True


def test_a_live_process_is_never_dead(broker: Broker, holder: str) -> None:
    beat(broker, holder)

    assert broker.processes.is_dead(holder, 0.0) is False
    assert broker.processes.is_dead(holder + "-never-seen", 3600.0) is True


def test_set_and_clear_work(broker: Broker, holder: str) -> None:
    beat(broker, holder)
    broker.processes.set_work(holder, "t2", work("mail", 200.0))
    broker.processes.set_work(holder, "t1", work())

    running = broker.processes.work(holder)
    broker.processes.clear_work(holder, "t2")
    broker.processes.clear_work(holder, "never-ran")

    assert running == [RunningJob(holder, "t1", work()),
                       RunningJob(holder, "t2", work("mail", 200.0))]
    assert broker.processes.work(holder) == [RunningJob(holder, "t1", work())]


def test_work_of_the_fleet_lists_live_processes_only(broker: Broker) -> None:
    for identity in ("b:1", "a:1"):
        beat(broker, identity)
        broker.processes.set_work(identity, "t1", work())
    broker.processes.set_work("gone:1", "t1", work())  # never beat

    running = broker.processes.work()

    assert [(r.identity, r.tid) for r in running] == [("a:1", "t1"), ("b:1", "t1")]
    assert [r.identity for r in broker.processes.work("gone:1")] == ["gone:1"]


def test_replace_work_swaps_everything_in_one_step(broker: Broker, holder: str) -> None:
    beat(broker, holder)
    broker.processes.set_work(holder, "old", work())

    broker.processes.replace_work(holder, {"t1": work(), "t2": work("mail")}, 60.0)
    replaced = [r.tid for r in broker.processes.work(holder)]
    broker.processes.replace_work(holder, {}, 60.0)

    assert replaced == ["t1", "t2"]
    assert broker.processes.work(holder) == []


def test_stored_work_is_a_copy(broker: Broker, holder: str) -> None:
    record = work()
    broker.processes.set_work(holder, "t1", record)
    record.payload["args"].append("changed later")

    assert broker.processes.work(holder)[0].work.payload["args"] == [1]


def test_a_signal_reaches_each_subscriber(broker: Broker, holder: str) -> None:
    assert broker.processes.signal(holder, "quiet") == 0  # nobody listens: nothing kept

    with broker.processes.subscribe_signals(holder) as first, \
            broker.processes.subscribe_signals(holder) as second:
        assert broker.processes.signal(holder, "stop") == 2
        assert (first.get(5.0), second.get(5.0)) == ("stop", "stop")
        assert first.get(0.05) is None  # the earlier signal was not kept


def test_an_unknown_signal_is_refused(broker: Broker, holder: str) -> None:
    with pytest.raises(ValueError):
        broker.processes.signal(holder, "explode")


def test_a_subscription_closes_twice_without_error(broker: Broker, holder: str) -> None:
    with broker.processes.subscribe_signals(holder) as subscription:
        subscription.close()
        subscription.close()
