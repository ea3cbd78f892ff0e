"""``broker.sets``: the schedule, retry and dead sets, on every broker."""

from __future__ import annotations

import json

import pytest

from cogworker.core.broker import Broker, SetEntry
from contract.conftest import MakeBroker
from contract.payloads import field_of, job


def scores(broker: Broker, set_name: str) -> list[tuple[str, float]]:
    return [(e.raw, e.score) for e in broker.sets.page(set_name, 0, 1000,  # type: ignore[arg-type]
                                                       newest_first=False)]


def test_filing_again_gives_an_entry_its_new_score(broker: Broker) -> None:
    raw = job()
    broker.sets.file("retry", 10.0, raw)
    broker.sets.file("retry", 20.0, raw)

    assert scores(broker, "retry") == [(raw, 20.0)]
    assert broker.sets.size("retry") == 1


def test_an_unknown_set_is_refused(broker: Broker) -> None:
    with pytest.raises(ValueError):
        broker.sets.size("morgue")  # type: ignore[arg-type]


def test_dead_keeps_at_most_dead_max_jobs_dropping_the_oldest(make_broker: MakeBroker) -> None:
    broker = make_broker(dead_max_jobs=2)
    now = broker.server_time()
    raws = [job() for _ in range(3)]
    for offset, raw in enumerate(raws):
        broker.sets.file("dead", now + offset, raw)

    assert [raw for raw, _score in scores(broker, "dead")] == raws[1:]


def test_dead_drops_entries_older_than_dead_timeout_on_a_write(make_broker: MakeBroker) -> None:
    broker = make_broker(dead_timeout=3600.0)
    now = broker.server_time()
    old, recent = job(), job()
    broker.sets.file("dead", now - 7200, old)
    broker.sets.file("dead", now, recent)

    assert [raw for raw, _score in scores(broker, "dead")] == [recent]


def test_other_sets_are_not_capped(make_broker: MakeBroker) -> None:
    broker = make_broker(dead_max_jobs=1, dead_timeout=1.0)
    for _ in range(3):
        broker.sets.file("retry", 1.0, job())

    assert broker.sets.size("retry") == 3


def test_graduation_moves_due_entries_onto_the_push_end(broker: Broker) -> None:
    waiting, due, later = job("q"), job("q"), job("q")
    broker.queues.store([("q", waiting)], [])
    broker.sets.file("schedule", 100.0, due)
    broker.sets.file("schedule", 300.0, later)

    with broker.queues.subscribe_wakeups() as wakeups:
        report = broker.sets.graduate("schedule", 200.0, 10)
        assert wakeups.get(5.0) == "q"

    assert (report.moved, report.buried, report.deferred) == (1, 0, 0)
    assert scores(broker, "schedule") == [(later, 300.0)]
    [first, moved] = [w.raw for w in broker.queues.pop(["q"], 2)]
    assert first == waiting
    assert field_of(moved, "enqueued_at") == 200.0
    assert json.loads(moved) | {"enqueued_at": None} == json.loads(due) | {"enqueued_at": None}


def test_graduation_moves_the_lowest_scores_first_up_to_its_limit(broker: Broker) -> None:
    raws = [job("q", n=n) for n in range(3)]
    for n, raw in enumerate(raws):
        broker.sets.file("retry", float(10 - n), raw)  # raws[2] is due first

    report = broker.sets.graduate("retry", 100.0, 2)

    assert report.moved == 2
    assert [field_of(w.raw, "n") for w in broker.queues.pop(["q"], 5)] == [2, 1]
    assert broker.sets.size("retry") == 1
    assert broker.queues.names() == ["q"]


def test_graduation_buries_what_is_not_a_job(broker: Broker) -> None:
    broker.sets.file("retry", 1.0, "garbage {")
    failed = broker.stats.totals().failed

    report = broker.sets.graduate("retry", 50.0, 10)

    assert (report.moved, report.buried) == (0, 1)
    assert broker.sets.size("retry") == 0
    [entry] = broker.sets.page("dead", 0, 1)
    assert field_of(entry.raw, "class") == "(unparseable)"
    assert field_of(entry.raw, "raw_payload") == "garbage {"
    assert broker.stats.totals().failed == failed + 1


def test_graduation_with_no_limit_does_nothing(broker: Broker) -> None:
    broker.sets.file("schedule", 1.0, job("q"))

    assert broker.sets.graduate("schedule", 10.0, 0).moved == 0
    assert broker.sets.size("schedule") == 1


def test_requeue_moves_an_entry_onto_the_push_end_as_its_new_raw(broker: Broker) -> None:
    waiting, entry, new_raw = job("q"), job("q"), job("q", manual_retry=True)
    broker.queues.store([("q", waiting)], [])
    broker.sets.file("dead", broker.server_time(), entry)

    with broker.queues.subscribe_wakeups() as wakeups:
        assert broker.sets.requeue("dead", entry, new_raw, "q") is True
        assert wakeups.get(5.0) == "q"

    assert broker.sets.size("dead") == 0
    assert broker.queues.page("q", 0, 5) == [new_raw, waiting]
    assert broker.sets.requeue("dead", entry, new_raw, "q") is False
    assert broker.queues.size("q") == 2


def test_requeue_registers_the_queue(broker: Broker) -> None:
    entry = job("fresh")
    broker.sets.file("retry", 1.0, entry)

    broker.sets.requeue("retry", entry, entry, "fresh")

    assert broker.queues.names() == ["fresh"]


def test_reschedule_changes_the_score_of_an_entry_still_there(broker: Broker) -> None:
    raw = job()
    broker.sets.file("schedule", 1.0, raw)

    assert broker.sets.reschedule("schedule", raw, 5.0) is True
    assert scores(broker, "schedule") == [(raw, 5.0)]
    assert broker.sets.reschedule("schedule", job(), 5.0) is False
    assert broker.sets.size("schedule") == 1


def test_delete_and_clear(broker: Broker) -> None:
    raws = [job() for _ in range(3)]
    for raw in raws:
        broker.sets.file("dead", broker.server_time(), raw)

    assert broker.sets.delete("dead", raws[0]) is True
    assert broker.sets.delete("dead", raws[0]) is False
    assert broker.sets.clear("dead") == 2
    assert broker.sets.size("dead") == 0
    assert broker.sets.clear("dead") == 0


def test_size_counts_what_is_due(broker: Broker) -> None:
    for score in (1.0, 2.0, 3.0):
        broker.sets.file("schedule", score, job())

    assert broker.sets.size("schedule") == 3
    assert broker.sets.size("schedule", max_score=2.0) == 2
    assert broker.sets.size("schedule", max_score=0.5) == 0


def test_pages_are_newest_first_by_score(broker: Broker) -> None:
    raws = [job(n=n) for n in range(4)]
    for n, raw in enumerate(raws):
        broker.sets.file("retry", float(n), raw)

    assert [e.raw for e in broker.sets.page("retry", 0, 2)] == [raws[3], raws[2]]
    assert [e.raw for e in broker.sets.page("retry", 1, 2, newest_first=False)] == raws[1:3]
    assert broker.sets.page("retry", 1, 1)[0] == SetEntry(raws[2], 2.0)
    assert broker.sets.page("retry", 4, 2) == []
    assert broker.sets.page("retry", 0, 0) == []
    with pytest.raises(ValueError):
        broker.sets.page("retry", -1, 2)


def test_by_score_reads_a_range_lowest_first_ties_in_raw_order(broker: Broker) -> None:
    a, b, c, d = '{"a":1}', '{"b":1}', '{"c":1}', '{"d":1}'
    broker.sets.file("retry", 5.0, c)
    broker.sets.file("retry", 5.0, a)
    broker.sets.file("retry", 3.0, d)
    broker.sets.file("retry", 9.0, b)

    assert [e.raw for e in broker.sets.by_score("retry", 3.0, 5.0, limit=10)] == [d, a, c]
    assert [e.raw for e in broker.sets.by_score("retry", 4.0, 100.0, limit=2)] == [a, c]
    assert broker.sets.by_score("retry", 10.0, 20.0, limit=5) == []
    with pytest.raises(ValueError):
        broker.sets.by_score("retry", 0.0, 1.0, limit=0)


def test_a_set_search_carries_scores_and_goes_on_by_position(broker: Broker) -> None:
    raws = [job(tag="hit" if n % 2 else "miss") for n in range(6)]
    for n, raw in enumerate(raws):
        broker.sets.file("schedule", float(n), raw)

    first = broker.sets.search("schedule", '"hit"', limit=2, window=10)
    rest = broker.sets.search("schedule", '"hit"', start=first.next_position or 0, limit=10,
                              window=10)
    oldest = broker.sets.search("schedule", '"hit"', newest_first=False, limit=1, window=10)

    assert [(h.position, h.score) for h in first.hits] == [(0, 5.0), (2, 3.0)]
    assert [(h.position, h.score) for h in rest.hits] == [(4, 1.0)]
    assert rest.next_position is None
    assert [(h.position, h.raw) for h in oldest.hits] == [(1, raws[1])]
