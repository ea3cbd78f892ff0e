"""``broker.extension(LIMITS)``: fleet-wide limiters, on every broker.

Times are short (a fraction of a second) because Redis's clock cannot be moved: on Redis
the store's time passes by sleeping."""

from __future__ import annotations

import pytest

from cogworker.core.broker import LIMITS, Broker, LimiterSpec, LimitStore
from cogworker.core.broker.limits import holder_member
from contract.conftest import StoreTime


@pytest.fixture
def store(broker: Broker) -> LimitStore:
    found = broker.extension(LIMITS)
    assert found is not None, f"the {broker.name} broker has no limits facet"
    return found


def concurrent(limit: int = 2, lease: float = 60.0, name: str = "api") -> LimiterSpec:
    return LimiterSpec(name, "concurrent", limit, lease=lease)


def member(identity: str, jid: str) -> str:
    return holder_member(identity, jid, "t0")


def test_a_concurrent_limiter_admits_up_to_its_limit(store: LimitStore, holder: str) -> None:
    spec = concurrent(2)
    assert store.acquire(spec, member(holder, "a")).admitted
    assert store.acquire(spec, member(holder, "b")).admitted
    refused = store.acquire(spec, member(holder, "c"))
    assert not refused.admitted
    assert refused.retry_after is None  # holders end when their jobs do: no estimate

    assert store.release("api", member(holder, "a"))
    assert not store.release("api", member(holder, "a"))
    assert store.acquire(spec, member(holder, "c")).admitted


def test_an_expired_lease_frees_its_slot(store: LimitStore, holder: str,
                                         store_time: StoreTime) -> None:
    spec = concurrent(1, lease=0.3)
    assert store.acquire(spec, member(holder, "a")).admitted
    assert not store.acquire(spec, member(holder, "b")).admitted
    store_time(0.4)
    assert store.acquire(spec, member(holder, "b")).admitted


def test_renewing_keeps_a_slot_past_its_first_lease(store: LimitStore, holder: str,
                                                    store_time: StoreTime) -> None:
    spec = concurrent(1, lease=0.5)
    store.register([spec])
    mine = member(holder, "a")
    assert store.acquire(spec, mine).admitted
    store_time(0.3)
    assert store.renew({"api": [(mine, 0.5)]}, holder) == 1
    store_time(0.3)
    assert not store.acquire(spec, member(holder, "b")).admitted
    [usage] = store.usage()
    assert [h.jid for h in usage.holders] == ["a"]
    assert store.release("api", mine)
    assert store.renew({"api": [(mine, 0.5)]}, holder) == 0  # a gone holder stays gone


def test_releasing_a_dead_process_frees_only_its_slots(store: LimitStore, holder: str) -> None:
    other = holder + "-other"
    first, second = concurrent(3, name="first"), concurrent(3, name="second")
    store.register([first, second])
    assert store.acquire(first, member(holder, "a")).admitted
    assert store.acquire(second, member(holder, "b")).admitted
    assert store.acquire(first, member(other, "c")).admitted

    assert store.release_process(holder) == 2
    assert store.release_process(holder) == 0
    by_name = {usage.spec.name: usage for usage in store.usage()}
    assert [h.identity for h in by_name["first"].holders] == [other]
    assert by_name["second"].holders == ()


def test_a_fixed_window_admits_its_limit_then_says_when_it_has_room(
        store: LimitStore) -> None:
    spec = LimiterSpec("win", "window", 3, per=3600.0)
    answers = [store.acquire(spec) for _ in range(5)]
    assert [answer.admitted for answer in answers] == [True, True, True, False, False]
    assert all(0 < (answer.retry_after or 0) <= 3600 for answer in answers[3:])


def test_a_fixed_window_has_room_again_when_the_next_one_starts(
        store: LimitStore, store_time: StoreTime) -> None:
    spec = LimiterSpec("short", "window", 2, per=0.5)
    refused = None
    for _ in range(5):  # at most two windows' worth before one is full
        answer = store.acquire(spec)
        if not answer.admitted:
            refused = answer
            break
    assert refused is not None and refused.retry_after is not None
    store_time(refused.retry_after + 0.02)
    assert store.acquire(spec).admitted


def test_a_sliding_window_counts_the_last_period(store: LimitStore,
                                                 store_time: StoreTime) -> None:
    spec = LimiterSpec("slide", "window", 2, per=0.4, sliding=True)
    store.register([spec])
    assert store.acquire(spec).admitted
    assert store.acquire(spec).admitted
    refused = store.acquire(spec)
    assert not refused.admitted
    assert refused.retry_after is not None and 0 < refused.retry_after <= 0.4
    [usage] = store.usage()
    assert usage.used == 2
    store_time(0.45)
    assert store.acquire(spec).admitted


def test_a_bucket_allows_a_burst_then_its_rate(store: LimitStore,
                                               store_time: StoreTime) -> None:
    spec = LimiterSpec("bucket", "bucket", 3, rate=5.0)
    assert [store.acquire(spec).admitted for _ in range(3)] == [True] * 3
    refused = store.acquire(spec)
    assert not refused.admitted
    assert refused.retry_after is not None and 0 < refused.retry_after <= 0.2
    store_time(0.25)  # 5 a second: one more token
    assert store.acquire(spec).admitted


def test_usage_lists_registered_limiters_with_counts(store: LimitStore, holder: str) -> None:
    spec, window = concurrent(1), LimiterSpec("w", "window", 5, per=60.0)
    store.register([spec, window])
    assert store.acquire(spec, member(holder, "a")).admitted
    assert not store.acquire(spec, member(holder, "b")).admitted
    assert store.acquire(window).admitted

    by_name = {usage.spec.name: usage for usage in store.usage()}
    assert list(by_name) == ["api", "w"]
    assert by_name["api"].spec == spec
    assert (by_name["api"].used, by_name["api"].acquired, by_name["api"].over) == (1, 1, 1)
    [held] = by_name["api"].holders
    assert (held.identity, held.jid) == (holder, "a")
    assert (by_name["w"].used, by_name["w"].acquired) == (1, 1)


def test_reset_empties_a_limiter_and_its_counters(store: LimitStore, holder: str) -> None:
    spec = concurrent(1)
    store.register([spec])
    assert store.acquire(spec, member(holder, "a")).admitted
    assert store.reset("api")
    assert not store.reset("nothing-registered")
    [usage] = store.usage()
    assert (usage.used, usage.acquired, usage.over) == (0, 0, 0)
    assert store.acquire(spec, member(holder, "b")).admitted


def test_a_concurrent_acquire_needs_a_holder(store: LimitStore) -> None:
    with pytest.raises(ValueError, match="needs a holder"):
        store.acquire(concurrent())


@pytest.mark.parametrize(("kwargs", "problem"), [
    ({"kind": "concurrent", "limit": 0, "lease": 1.0}, "limit must be a whole number"),
    ({"kind": "window", "limit": 1, "per": 0}, "per must be"),
    ({"kind": "bucket", "limit": 1, "rate": -1.0}, "rate must be"),
    ({"kind": "sometimes", "limit": 1}, "kind must be one of"),
])
def test_a_spec_with_bad_numbers_is_refused(kwargs: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        LimiterSpec("x", **kwargs)  # type: ignore[arg-type]
