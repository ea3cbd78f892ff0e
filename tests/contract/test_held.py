"""``broker.held``: claiming, holding and settling jobs, on every broker.

Recovery (dead holders, repeat orphans, handed-over failures) is in ``test_recovery.py``.
"""

from __future__ import annotations

import threading

import pytest

from cogworker.core.broker import Broker, LockClaim, RecoveryOptions, UnitOfWork
from contract.payloads import jid_of, job

ONCE = RecoveryOptions(threshold=3600.0, max_orphanings=1)


def claimed(broker: Broker, holder: str, *raws: str, queue: str = "q") -> list[UnitOfWork]:
    """Store ``raws`` on ``queue`` and claim them all for ``holder``, first stored first."""
    broker.queues.store([(queue, raw) for raw in raws], [])
    return list(broker.held.claim(holder, [queue], len(raws)).works)


def test_a_modern_store_can_hold_jobs(broker: Broker) -> None:
    assert broker.held.supported() is None


def test_a_claim_moves_jobs_from_the_pop_ends_in_order(broker: Broker, holder: str) -> None:
    a1, a2, b1 = job("a"), job("a"), job("b")
    broker.queues.store([("a", a1), ("a", a2), ("b", b1)], [])

    batch = broker.held.claim(holder, ["b", "a"], 2)

    assert batch.works == (UnitOfWork("b", b1), UnitOfWork("a", a1))
    assert batch.open_queues == ("b", "a")
    assert broker.held.held(holder) == [a1, b1]  # most recently claimed first
    assert broker.queues.page("a", 0, 10) == [a2]
    assert broker.queues.size("b") == 0


def test_a_claim_skips_paused_queues(broker: Broker, holder: str) -> None:
    paused, open_ = job("p"), job("o")
    broker.queues.store([("p", paused), ("o", open_)], [])
    broker.queues.pause("p")

    batch = broker.held.claim(holder, ["p", "o", "empty"], 5)

    assert batch.works == (UnitOfWork("o", open_),)
    assert batch.open_queues == ("o", "empty")
    assert broker.queues.page("p", 0, 1) == [paused]


def test_a_claim_of_no_queue_takes_nothing(broker: Broker, holder: str) -> None:
    batch = broker.held.claim(holder, [], 5)

    assert (batch.works, batch.open_queues) == ((), ())


def test_a_claim_needs_a_positive_count(broker: Broker, holder: str) -> None:
    with pytest.raises(ValueError):
        broker.held.claim(holder, ["q"], 0)


def test_claim_blocking_holds_the_job_it_takes(broker: Broker, holder: str) -> None:
    raw = job("q")
    broker.queues.store([("q", raw)], [])

    assert broker.held.claim_blocking(holder, "q", 1.0) == UnitOfWork("q", raw)
    assert broker.held.held(holder) == [raw]


def test_claim_blocking_is_woken_by_a_push(broker: Broker, holder: str) -> None:
    raw = job("q")
    result: list[UnitOfWork | None] = []
    waiting = threading.Thread(target=lambda: result.append(
        broker.held.claim_blocking(holder, "q", 10.0)))
    waiting.start()
    broker.queues.store([("q", raw)], [])
    waiting.join(15.0)

    assert result == [UnitOfWork("q", raw)]
    assert broker.held.held(holder) == [raw]


def test_claim_blocking_gives_none_after_its_timeout(broker: Broker, holder: str) -> None:
    assert broker.held.claim_blocking(holder, "empty", 0.1) is None
    assert broker.held.held(holder) == []


@pytest.mark.parametrize("timeout", [0.0, -1.0])
def test_claim_blocking_needs_a_timeout(broker: Broker, holder: str, timeout: float) -> None:
    with pytest.raises(ValueError):
        broker.held.claim_blocking(holder, "q", timeout)


def test_release_drops_each_raw_once(broker: Broker, holder: str) -> None:
    same = job("q")
    works = claimed(broker, holder, same, same, job("q"))

    assert broker.held.release(holder, [works[0], UnitOfWork("q", job("q"))]) == 1
    assert sorted(broker.held.held(holder)) == sorted([same, works[2].raw])
    assert broker.held.release(holder, []) == 0


def test_release_forgets_the_orphan_counter_of_a_job_it_dropped(broker: Broker,
                                                                holder: str) -> None:
    raw = job("q")
    claimed(broker, holder, raw)
    broker.held.recover_process(holder, ONCE)  # orphaned once: max_orphanings reached
    claimed(broker, holder, raw)

    assert broker.held.release(holder, [UnitOfWork("q", raw)]) == 1

    claimed(broker, holder, raw)
    report = broker.held.recover_process(holder, ONCE)
    assert (report.moved, report.parked) == (1, 0)  # the count started again


def test_a_late_release_leaves_the_counter_to_the_run_that_superseded_it(
        broker: Broker, holder: str) -> None:
    raw, successor = job("q"), holder + "-next"
    [work] = claimed(broker, holder, raw)
    broker.held.recover_process(holder, ONCE)  # taken for dead: the job runs elsewhere
    claimed(broker, successor, raw)

    assert broker.held.release(holder, [work]) == 0  # the superseded run's late ack

    report = broker.held.recover_process(successor, ONCE)
    assert (report.moved, report.parked) == (0, 1)  # the counter survived the late ack


def test_return_to_queue_puts_a_job_back_where_it_runs_next(broker: Broker,
                                                            holder: str) -> None:
    waiting = job("q")
    [work] = claimed(broker, holder, job("q"))
    broker.queues.store([("q", waiting)], [])

    with broker.queues.subscribe_wakeups() as wakeups:
        assert broker.held.return_to_queue(holder, work) is True
        assert wakeups.get(5.0) == "q"

    assert broker.held.held(holder) == []
    assert broker.queues.pop(["q"], 2) == [work, UnitOfWork("q", waiting)]


def test_return_to_queue_uses_the_queue_the_payload_names(broker: Broker,
                                                          holder: str) -> None:
    nameless = '{"class":"Work","args":[],"jid":"j-nameless"}'
    claimed(broker, holder, nameless, queue="fetched-from")

    assert broker.held.return_to_queue(holder, UnitOfWork("fetched-from", nameless)) is True
    assert broker.queues.page("default", 0, 1) == [nameless]
    assert broker.queues.size("fetched-from") == 0


def test_return_to_queue_of_a_job_not_held_writes_nothing(broker: Broker,
                                                          holder: str) -> None:
    stray = UnitOfWork("q", job("q"))

    assert broker.held.return_to_queue(holder, stray) is False
    assert broker.queues.size("q") == 0


def test_return_to_queue_retakes_the_lock(broker: Broker, holder: str) -> None:
    [work] = claimed(broker, holder, job("q"))

    assert broker.held.return_to_queue(
        holder, work, lambda raw: LockClaim("acme:run", "jid-1", 300)) is True
    assert broker.locks.owner("acme:run") == "jid-1"


def test_file_writes_the_record_and_drops_the_job(broker: Broker, holder: str) -> None:
    [work] = claimed(broker, holder, job("q"))
    record = job("q", error_class="Boom")

    assert broker.held.file(holder, work, "retry", 1234.5, record) is True
    assert [(e.raw, e.score) for e in broker.sets.page("retry", 0, 10)] == [(record, 1234.5)]
    assert broker.held.held(holder) == []


def test_file_forgets_the_orphan_counter(broker: Broker, holder: str) -> None:
    raw = job("q")
    claimed(broker, holder, raw)
    broker.held.recover_process(holder, ONCE)
    [work] = claimed(broker, holder, raw)

    broker.held.file(holder, work, "dead", 1.0, raw)

    claimed(broker, holder, raw)
    assert broker.held.recover_process(holder, ONCE).parked == 0


def test_file_of_a_job_not_held_writes_nothing(broker: Broker, holder: str) -> None:
    assert broker.held.file(holder, UnitOfWork("q", job("q")), "dead", 1.0, job()) is False
    assert broker.sets.size("dead") == 0


def test_park_hands_a_failure_over_for_filing(broker: Broker, holder: str) -> None:
    [work] = claimed(broker, holder, job("q"))
    record = job("q", error_class="Boom")

    assert broker.held.park(holder, work, "retry", 99.0, record) is True
    assert broker.held.held(holder) == []
    assert broker.sets.size("retry") == 0  # not filed yet: any live process files it
    assert broker.queues.size("q") == 0  # it ran: never requeued

    assert broker.held.file_unsettled() == [("retry", record)]
    assert [(e.raw, e.score) for e in broker.sets.page("retry", 0, 1)] == [(record, 99.0)]
    assert broker.held.file_unsettled() == []


def test_park_of_a_job_not_held_writes_nothing(broker: Broker, holder: str) -> None:
    assert broker.held.park(holder, UnitOfWork("q", job("q")), "dead", 1.0, job()) is False
    assert broker.held.file_unsettled() == []


def test_hand_over_leaves_a_failure_for_filing(broker: Broker) -> None:
    first, second = job("q"), job("q")
    broker.held.hand_over("dead", 5.0, first)
    broker.held.hand_over("schedule", 6.0, second)

    assert broker.held.file_unsettled() == [("dead", first), ("schedule", second)]
    assert broker.sets.page("dead", 0, 1)[0].raw == first
    assert broker.sets.page("schedule", 0, 1)[0].raw == second


def test_requeue_all_settles_everything_held_at_shutdown(broker: Broker, holder: str) -> None:
    done, kept, first, second = job("q"), job("q"), job("q"), job("q")
    claimed(broker, holder, first, done, second, kept)
    broker.queues.store([("q", job("q"))], [])

    with broker.queues.subscribe_wakeups() as wakeups:
        assert broker.held.requeue_all(holder, [done], [kept]) == 2
        assert wakeups.get(5.0) == "q"

    assert broker.held.held(holder) == [kept]
    assert [w.raw for w in broker.queues.pop(["q"], 2)] == [first, second]


def test_requeue_all_counts_raws_by_occurrence(broker: Broker, holder: str) -> None:
    same = job("q")
    claimed(broker, holder, same, same, same)

    assert broker.held.requeue_all(holder, [same], [same]) == 1
    assert broker.held.held(holder) == [same]
    assert broker.queues.page("q", 0, 10) == [same]


def test_requeue_all_with_nothing_held_requeues_nothing(broker: Broker, holder: str) -> None:
    assert broker.held.requeue_all(holder, [], []) == 0


def test_requeue_all_is_no_orphaning(broker: Broker, holder: str) -> None:
    raw = job("q")
    claimed(broker, holder, raw)
    broker.held.recover_process(holder, ONCE)  # orphaned once
    claimed(broker, holder, raw)

    assert broker.held.requeue_all(holder, [], []) == 1

    claimed(broker, holder, raw)
    assert broker.held.recover_process(holder, ONCE).parked == 1  # still counted once


def test_requeue_all_retakes_each_jobs_lock(broker: Broker, holder: str) -> None:
    raws = [job("q"), job("q")]
    claimed(broker, holder, *raws)

    broker.held.requeue_all(holder, [], [],
                            lambda raw: LockClaim(f"acme:{jid_of(raw)}", "o", 60))

    assert set(broker.locks.get([f"acme:{jid_of(raw)}" for raw in raws])) == \
        {f"acme:{jid_of(raw)}" for raw in raws}


def test_concurrent_claims_take_each_job_once(broker: Broker, holder: str) -> None:
    raws = [job("q", n=n) for n in range(200)]
    broker.queues.store([("q", raw) for raw in raws], [])
    taken: dict[str, list[str]] = {f"{holder}-{n}": [] for n in range(4)}

    def drain(identity: str) -> None:
        while works := broker.held.claim(identity, ["q"], 3).works:
            taken[identity] += [work.raw for work in works]

    threads = [threading.Thread(target=drain, args=(identity,)) for identity in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    everything = [raw for raws_taken in taken.values() for raw in raws_taken]
    assert sorted(everything) == sorted(raws)
    assert all(sorted(broker.held.held(i)) == sorted(t) for i, t in taken.items())
