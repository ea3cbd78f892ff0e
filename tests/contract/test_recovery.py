"""``broker.held``'s recovery: dead holders, repeat orphans, on every broker.

A holder is dead when its presence is gone and its last beat is older than the threshold;
the tests make a holder "gone" with ``processes.remove`` (its last beat stays while it holds
jobs) and choose the threshold, so no test waits for a TTL.
"""

from __future__ import annotations

import json

from cogworker.core.broker import Broker, LockClaim, RecoveryOptions, UnitOfWork
from contract.payloads import field_of, job

DEAD_AT_ONCE = RecoveryOptions(threshold=0.0, max_orphanings=3)
RECENT_BEATS_COUNT = RecoveryOptions(threshold=3600.0, max_orphanings=3)


def beat(broker: Broker, identity: str, queues: tuple[str, ...] = ()) -> None:
    broker.processes.beat(identity, {"hostname": "h"}, 0, False, queues, 60.0, True)


def holding(broker: Broker, holder: str, *raws: str, queue: str = "q") -> None:
    """``holder`` beat, claimed ``raws`` (first stored first) and then went away."""
    beat(broker, holder)
    broker.queues.store([(queue, raw) for raw in raws], [])
    broker.held.claim(holder, [queue], len(raws))
    broker.processes.remove(holder)


def test_the_jobs_of_a_dead_holder_go_back_earliest_claimed_first(broker: Broker,
                                                                  holder: str) -> None:
    first, second, third = job("q"), job("q"), job("q")
    holding(broker, holder, first, second, third)

    report = broker.held.recover_orphans("me", DEAD_AT_ONCE)

    assert (report.moved, report.recovered, report.registry_read) == (3, {holder: 3}, True)
    assert broker.held.held(holder) == []
    assert [w.raw for w in broker.queues.pop(["q"], 3)] == [first, second, third]


def test_recovered_jobs_run_before_the_jobs_waiting(broker: Broker, holder: str) -> None:
    orphan, waiting = job("q"), job("q")
    holding(broker, holder, orphan)
    broker.queues.store([("q", waiting)], [])

    broker.held.recover_orphans("me", DEAD_AT_ONCE)

    assert [w.raw for w in broker.queues.pop(["q"], 2)] == [orphan, waiting]


def test_a_live_holder_keeps_its_jobs(broker: Broker, holder: str) -> None:
    raw = job("q")
    holding(broker, holder, raw)
    beat(broker, holder)  # back: its presence is there again

    report = broker.held.recover_orphans("me", DEAD_AT_ONCE)

    assert (report.moved, report.recovered) == (0, {})
    assert broker.held.held(holder) == [raw]


def test_a_holder_whose_last_beat_is_recent_keeps_its_jobs(broker: Broker,
                                                           holder: str) -> None:
    raw = job("q")
    holding(broker, holder, raw)  # presence gone, last beat a moment ago

    assert broker.held.recover_orphans("me", RECENT_BEATS_COUNT).moved == 0
    assert broker.held.held(holder) == [raw]
    assert broker.processes.is_dead(holder, 3600.0) is False


def test_recovery_never_touches_its_own_jobs(broker: Broker, holder: str) -> None:
    raw = job("q")
    holding(broker, holder, raw)

    assert broker.held.recover_orphans(holder, DEAD_AT_ONCE).moved == 0
    assert broker.held.held(holder) == [raw]


def test_an_unregistered_holder_is_found_only_by_a_scan(broker: Broker, holder: str) -> None:
    raw = job("q")
    broker.queues.store([("q", raw)], [])
    broker.held.claim(holder, ["q"], 1)  # it never beat: neither registered nor stamped

    assert broker.held.recover_orphans("me", DEAD_AT_ONCE).moved == 0
    scanned = broker.held.recover_orphans(
        "me", RecoveryOptions(threshold=3600.0, max_orphanings=3, scan=True))

    assert (scanned.moved, scanned.registry_read) == (1, True)  # no last beat counts as old
    assert broker.queues.page("q", 0, 1) == [raw]


def test_a_dead_holder_left_with_nothing_is_forgotten(broker: Broker, holder: str) -> None:
    holding(broker, holder, job("q"))
    assert broker.processes.is_dead(holder, 3600.0) is False  # its last beat is kept

    broker.held.recover_orphans("me", DEAD_AT_ONCE)

    assert broker.processes.is_dead(holder, 3600.0) is True  # last beat forgotten too


def test_recovery_goes_to_the_queue_the_payload_names(broker: Broker, holder: str) -> None:
    nameless = '{"class":"Work","args":[],"jid":"j-nameless"}'
    holding(broker, holder, job("mail"), nameless, queue="fetched-from")

    broker.held.recover_orphans("me", DEAD_AT_ONCE)

    assert broker.queues.size("mail") == 1
    assert broker.queues.page("default", 0, 1) == [nameless]


def test_a_queue_no_live_process_reads_is_registered_and_reported(broker: Broker,
                                                                  holder: str) -> None:
    beat(broker, "reader", queues=("read",))
    holding(broker, holder, job("read"), job("unread"), queue="read")

    report = broker.held.recover_orphans("me", DEAD_AT_ONCE)

    assert report.unlisted_queues == ["unread"]
    assert "unread" in broker.queues.names()


def test_recovery_wakes_the_fetchers(broker: Broker, holder: str) -> None:
    holding(broker, holder, job("q"))

    with broker.queues.subscribe_wakeups() as wakeups:
        broker.held.recover_orphans("me", DEAD_AT_ONCE)
        assert wakeups.get(5.0) == "q"


def test_recovery_retakes_the_lock(broker: Broker, holder: str) -> None:
    holding(broker, holder, job("q"))

    broker.held.recover_orphans("me", DEAD_AT_ONCE,
                                lambda raw: LockClaim("periodic:running:p1", "jid-9", 60))

    assert broker.locks.owner("periodic:running:p1") == "jid-9"


def test_a_job_orphaned_too_often_goes_to_dead(broker: Broker, holder: str) -> None:
    raw = job("q", jid="j-repeat")
    options = RecoveryOptions(threshold=0.0, max_orphanings=2)
    for _orphaning in range(2):
        holding(broker, holder, raw)
        assert broker.held.recover_orphans("me", options).moved == 1
        broker.queues.clear("q")
    holding(broker, holder, raw)
    failed_before = broker.stats.totals().failed

    report = broker.held.recover_orphans("me", options)
    buried = broker.held.bury_repeat_orphans(1000.0, 2)

    assert (report.moved, report.parked) == (0, 1)
    assert broker.queues.size("q") == 0
    [record] = buried
    assert json.loads(record)["jid"] == "j-repeat"
    assert field_of(record, "error_class") == "cogworker.JobOrphanedError"
    assert "more than 2 times" in field_of(record, "error_message")
    assert [(e.raw, e.score) for e in broker.sets.page("dead", 0, 5)] == [(record, 1000.0)]
    assert broker.stats.totals().failed == failed_before + 1
    assert broker.held.bury_repeat_orphans(1000.0, 2) == []


def test_burial_forgets_the_orphan_counter(broker: Broker, holder: str) -> None:
    raw = job("q")
    once = RecoveryOptions(threshold=0.0, max_orphanings=1)
    holding(broker, holder, raw)
    broker.held.recover_orphans("me", once)
    broker.queues.clear("q")
    holding(broker, holder, raw)
    broker.held.recover_orphans("me", once)
    broker.held.bury_repeat_orphans(1.0, 1)

    holding(broker, holder, raw)  # the same job again, after its burial
    assert broker.held.recover_orphans("me", once).moved == 1


def test_bytes_that_are_no_job_are_buried_in_a_wrapper(broker: Broker, holder: str) -> None:
    garbage = "not a job \udcff"
    never = RecoveryOptions(threshold=0.0, max_orphanings=0)
    holding(broker, holder, garbage)

    assert broker.held.recover_orphans("me", never).parked == 1
    [record] = broker.held.bury_repeat_orphans(5.0, 0)

    assert field_of(record, "class") == "(unparseable)"
    assert field_of(record, "error_class") == "cogworker.JobOrphanedError"
    assert field_of(record, "raw_payload_base64") is not None


def test_recover_process_needs_no_liveness_check(broker: Broker, holder: str) -> None:
    raws = [job("q"), job("q")]
    beat(broker, holder)
    broker.queues.store([("q", raw) for raw in raws], [])
    broker.held.claim(holder, ["q"], 2)

    report = broker.held.recover_process(holder, RECENT_BEATS_COUNT)

    assert (report.moved, report.recovered) == (2, {holder: 2})
    assert [w.raw for w in broker.queues.pop(["q"], 2)] == raws


def test_recover_process_is_an_orphaning(broker: Broker, holder: str) -> None:
    raw = job("q")
    once = RecoveryOptions(threshold=3600.0, max_orphanings=1)
    for expected_parked in (0, 1):
        broker.queues.store([("q", raw)], [])
        broker.held.claim(holder, ["q"], 1)
        assert broker.held.recover_process(holder, once).parked == expected_parked
        broker.queues.clear("q")


def test_recover_process_of_a_holder_holding_nothing(broker: Broker, holder: str) -> None:
    report = broker.held.recover_process(holder, DEAD_AT_ONCE)

    assert (report.moved, report.parked, report.failures) == (0, 0, [])


def test_file_unsettled_files_in_the_order_handed_over(broker: Broker, holder: str) -> None:
    raws = [job("q"), job("q")]
    works = [UnitOfWork("q", raw) for raw in raws]
    broker.queues.store([("q", raw) for raw in raws], [])
    broker.held.claim(holder, ["q"], 2)
    broker.held.park(holder, works[0], "dead", 1.0, raws[0])
    broker.held.park(holder, works[1], "retry", 2.0, raws[1])

    assert broker.held.file_unsettled() == [("dead", raws[0]), ("retry", raws[1])]
