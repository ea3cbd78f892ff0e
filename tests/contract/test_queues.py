"""``broker.queues``: pushes, reads, pops and wake-ups, on every broker."""

from __future__ import annotations

import threading

import pytest

from cogworker.core.broker import Broker, LockClaim, UnitOfWork
from contract.payloads import job


def test_the_first_job_stored_is_the_first_taken(broker: Broker) -> None:
    first, second, third = job("q"), job("q"), job("q")
    broker.queues.store([("q", first), ("q", second)], [])
    broker.queues.store([("q", third)], [])

    taken = broker.queues.pop(["q"], 10)

    assert [work.raw for work in taken] == [first, second, third]
    assert {work.queue for work in taken} == {"q"}


def test_a_store_registers_its_queues_and_schedules_in_one_call(broker: Broker) -> None:
    now = broker.server_time()
    later, raws = job("b"), [job("a"), job("b")]

    broker.queues.store([("a", raws[0]), ("b", raws[1])], [(now + 60, later)])

    assert broker.queues.names() == ["a", "b"]
    assert broker.sets.page("schedule", 0, 10)[0].raw == later
    assert broker.sets.page("schedule", 0, 10)[0].score == pytest.approx(now + 60)


def test_an_empty_store_stores_nothing(broker: Broker) -> None:
    broker.queues.store([], [])

    assert broker.queues.names() == []
    assert broker.sets.size("schedule") == 0


@pytest.mark.parametrize("call", [
    lambda b: b.queues.store([("", job())], []),
    lambda b: b.queues.size(""),
    lambda b: b.queues.page("", 0, 1),
    lambda b: b.queues.remove("", job()),
    lambda b: b.queues.clear(""),
    lambda b: b.queues.pause(""),
])
def test_an_empty_queue_name_is_refused(broker: Broker, call: object) -> None:
    with pytest.raises(ValueError):
        call(broker)  # type: ignore[operator]


def test_a_store_wakes_the_fetchers_of_its_queues(broker: Broker) -> None:
    with broker.queues.subscribe_wakeups() as wakeups:
        broker.queues.store([("mail", job("mail"))], [])

        assert wakeups.get(5.0) == "mail"


def test_records_read_size_oldest_and_pause_together(broker: Broker) -> None:
    oldest, newest = job("a"), job("a")
    broker.queues.store([("a", oldest), ("a", newest), ("b", job("b"))], [])
    broker.queues.pause("b")

    records = broker.queues.records(["b", "a", "unknown"])

    assert [(r.name, r.size, r.paused) for r in records] == [
        ("b", 1, True), ("a", 2, False), ("unknown", 0, False)]
    assert records[1].oldest == oldest
    assert records[2].oldest is None
    assert [r.name for r in broker.queues.records()] == ["a", "b"]
    assert broker.queues.records([]) == []


def test_size_counts_waiting_jobs(broker: Broker) -> None:
    broker.queues.store([("a", job("a")), ("a", job("a"))], [])

    assert broker.queues.size("a") == 2
    assert broker.queues.size("never-used") == 0


def test_pages_read_from_either_end(broker: Broker) -> None:
    raws = [job("q") for _ in range(5)]
    broker.queues.store([("q", raw) for raw in raws], [])

    assert broker.queues.page("q", 0, 2) == [raws[4], raws[3]]
    assert broker.queues.page("q", 2, 2) == [raws[2], raws[1]]
    assert broker.queues.page("q", 0, 2, newest_first=False) == [raws[0], raws[1]]
    assert broker.queues.page("q", 4, 10, newest_first=False) == [raws[4]]
    assert broker.queues.page("q", 5, 10) == []
    assert broker.queues.page("q", 0, 0) == []
    assert broker.queues.page("unknown", 0, 10) == []


@pytest.mark.parametrize(("start", "count"), [(-1, 1), (0, -1)])
def test_a_negative_page_is_refused(broker: Broker, start: int, count: int) -> None:
    with pytest.raises(ValueError):
        broker.queues.page("q", start, count)


def test_a_search_folds_ascii_letters_only(broker: Broker) -> None:
    hit = job("q", note="Invoice ÄB")
    broker.queues.store([("q", job("q")), ("q", hit), ("q", job("q"))], [])

    page = broker.queues.search("q", "invoice Äb", limit=10, window=10)

    assert [(h.position, h.raw, h.score) for h in page.hits] == [(1, hit, None)]
    assert page.examined == 3
    assert page.next_position is None
    assert broker.queues.search("q", "invoice äb", limit=10, window=10).hits == ()


def test_a_search_counts_positions_in_its_direction(broker: Broker) -> None:
    raws = [job("q", n=n) for n in range(4)]  # raws[3] is the newest
    broker.queues.store([("q", raw) for raw in raws], [])

    newest = broker.queues.search("q", '"n":1', limit=10, window=10)
    oldest = broker.queues.search("q", '"n":1', newest_first=False, limit=10, window=10)

    assert [h.position for h in newest.hits] == [2]
    assert [h.position for h in oldest.hits] == [1]


def test_a_search_is_bounded_and_goes_on_from_where_it_stopped(broker: Broker) -> None:
    raws = [job("q", tag="hit" if n % 3 == 0 else "miss") for n in range(10)]
    broker.queues.store([("q", raw) for raw in raws], [])
    expected = [raw for raw in reversed(raws) if '"hit"' in raw]

    found, start, calls = [], 0, 0
    while True:
        page = broker.queues.search("q", '"hit"', start=start, limit=1, window=3)
        calls += 1
        assert page.examined <= 3
        assert len(page.hits) <= 1
        found += [hit.raw for hit in page.hits]
        if page.next_position is None:
            break
        start = page.next_position

    assert found == expected
    assert calls >= 4


def test_a_search_stops_at_its_limit(broker: Broker) -> None:
    broker.queues.store([("q", job("q")) for _ in range(6)], [])

    page = broker.queues.search("q", "", limit=2, window=100)

    assert [hit.position for hit in page.hits] == [0, 1]
    assert page.next_position == 2
    assert page.examined == 2


@pytest.mark.parametrize(("limit", "window"), [(0, 10), (10, 0)])
def test_a_search_needs_a_limit_and_a_window(broker: Broker, limit: int, window: int) -> None:
    with pytest.raises(ValueError):
        broker.queues.search("q", "x", limit=limit, window=window)


def test_remove_takes_every_equal_entry_out(broker: Broker) -> None:
    twice, other = job("q"), job("q")
    broker.queues.store([("q", twice), ("q", other), ("q", twice)], [])

    assert broker.queues.remove("q", twice) == 2
    assert broker.queues.page("q", 0, 10) == [other]
    assert broker.queues.remove("q", twice) == 0
    assert broker.queues.remove("unknown", twice) == 0


def test_remove_matches_exact_bytes(broker: Broker) -> None:
    raw = job("q", note="caf\udce9")  # a byte that is not UTF-8, kept by surrogateescape
    broker.queues.store([("q", raw)], [])

    assert broker.queues.page("q", 0, 1) == [raw]
    assert broker.queues.remove("q", raw) == 1


def test_clear_empties_a_queue_and_keeps_its_name(broker: Broker) -> None:
    broker.queues.store([("q", job("q")), ("q", job("q"))], [])

    assert broker.queues.clear("q") == 2
    assert broker.queues.size("q") == 0
    assert broker.queues.names() == ["q"]
    assert broker.queues.clear("q") == 0


def test_pause_and_resume_say_whether_they_changed_something(broker: Broker) -> None:
    assert broker.queues.pause("q") is True
    assert broker.queues.pause("q") is False
    assert broker.queues.paused() == frozenset({"q"})
    assert broker.queues.resume("q") is True
    assert broker.queues.resume("q") is False
    assert broker.queues.paused() == frozenset()


def test_pop_drains_the_first_queue_before_the_next(broker: Broker) -> None:
    a1, a2, b1 = job("a"), job("a"), job("b")
    broker.queues.store([("a", a1), ("a", a2), ("b", b1)], [])

    assert broker.queues.pop(["b", "a"], 2) == [UnitOfWork("b", b1), UnitOfWork("a", a1)]
    assert broker.queues.pop(["a", "b"], 5) == [UnitOfWork("a", a2)]
    assert broker.queues.pop(["a", "b"], 5) == []


def test_pop_does_not_skip_paused_queues(broker: Broker) -> None:
    raw = job("q")
    broker.queues.store([("q", raw)], [])
    broker.queues.pause("q")

    assert broker.queues.pop(["q"], 1) == [UnitOfWork("q", raw)]


def test_pop_of_nothing_takes_nothing(broker: Broker) -> None:
    broker.queues.store([("q", job("q"))], [])

    assert broker.queues.pop([], 5) == []
    assert broker.queues.pop(["q"], 0) == []
    assert broker.queues.size("q") == 1


def test_pop_blocking_takes_a_waiting_job_in_queue_order(broker: Broker) -> None:
    a, b = job("a"), job("b")
    broker.queues.store([("a", a), ("b", b)], [])

    assert broker.queues.pop_blocking(["b", "a"], 1.0) == UnitOfWork("b", b)


def test_pop_blocking_is_woken_by_a_push(broker: Broker) -> None:
    raw = job("late")
    result: list[UnitOfWork | None] = []
    waiting = threading.Thread(target=lambda: result.append(
        broker.queues.pop_blocking(["other", "late"], 10.0)))
    waiting.start()
    broker.queues.store([("late", raw)], [])
    waiting.join(15.0)

    assert result == [UnitOfWork("late", raw)]


def test_pop_blocking_gives_none_after_its_timeout(broker: Broker) -> None:
    assert broker.queues.pop_blocking(["empty"], 0.1) is None


@pytest.mark.parametrize(("order", "timeout"), [([], 1.0), (["q"], 0.0), (["q"], -1.0)])
def test_pop_blocking_refuses_no_queue_or_no_timeout(broker: Broker, order: list[str],
                                                     timeout: float) -> None:
    with pytest.raises(ValueError):
        broker.queues.pop_blocking(order, timeout)


def test_push_back_puts_a_job_on_the_pop_end(broker: Broker) -> None:
    waiting, taken = job("q"), job("q")
    broker.queues.store([("q", taken), ("q", waiting)], [])
    [work] = broker.queues.pop(["q"], 1)

    with broker.queues.subscribe_wakeups() as wakeups:
        broker.queues.push_back(work)
        assert wakeups.get(5.0) == "q"

    assert broker.queues.pop(["q"], 2) == [work, UnitOfWork("q", waiting)]


def test_push_back_retakes_the_lock_relock_names(broker: Broker) -> None:
    mine, theirs, free = job("q"), job("q"), job("q")
    broker.locks.acquire("acme:mine", "jid-mine", 5)
    broker.locks.acquire("acme:theirs", "someone", 300)
    claims = {mine: LockClaim("acme:mine", "jid-mine", 300),
              theirs: LockClaim("acme:theirs", "jid-theirs", 300),
              free: LockClaim("acme:free", "jid-free", 300)}

    for raw in (mine, theirs, free):
        broker.queues.push_back(UnitOfWork("q", raw), claims.__getitem__)

    locks = broker.locks.get(["acme:mine", "acme:theirs", "acme:free"])
    assert (locks["acme:mine"].owner, locks["acme:theirs"].owner,
            locks["acme:free"].owner) == ("jid-mine", "someone", "jid-free")
    assert locks["acme:mine"].ttl is not None and locks["acme:mine"].ttl > 5
    assert broker.queues.size("q") == 3


def test_a_relock_that_raises_requeues_without_a_lock(broker: Broker) -> None:
    def broken(raw: str) -> LockClaim | None:
        raise RuntimeError("a plugin bug")

    raw = job("q")
    broker.queues.push_back(UnitOfWork("q", raw), broken)

    assert broker.queues.page("q", 0, 1) == [raw]
