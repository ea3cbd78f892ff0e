"""``broker.extension(BATCHES)``: members, outcomes and exactly-once callbacks, on every
broker (the Redis one runs ``batch_update.lua``)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from cogworker.core.broker import BATCHES, BatchSpec, BatchStore, Broker, CallbackTemplate
from cogworker.core.broker.batches import ARGS_PLACEHOLDER, NOW_PLACEHOLDER, CallbackKind
from cogworker.core.payload import encode

TTL = 3600.0
QUEUE = "callbacks"


@pytest.fixture
def store(broker: Broker) -> BatchStore:
    found = broker.extension(BATCHES)
    assert found is not None, f"the {broker.name} broker has no batches facet"
    return found


def template(kind: CallbackKind, extra: str = "") -> CallbackTemplate:
    raw = encode({"class": f"on_{kind}", "queue": QUEUE, "jid": f"cb-{kind}", "retry": True,
                  "created_at": 1.0, "args": "@@batch-args@@",
                  "enqueued_at": "@@batch-now@@"})
    assert ARGS_PLACEHOLDER in raw and NOW_PLACEHOLDER in raw
    return CallbackTemplate(kind=kind, raw=raw, extra=extra)


def spec(bid: str, *kinds: CallbackKind, parent: str | None = None) -> BatchSpec:
    return BatchSpec(bid=bid, created_at=time.time(), description=f"batch {bid}",
                     callback_queue=QUEUE, parent=parent,
                     callbacks=tuple(template(kind, extra='7,"x"') for kind in kinds))


def pushed(broker: Broker) -> list[dict[str, Any]]:
    """The callbacks on the callback queue, oldest first."""
    return [json.loads(raw) for raw in broker.queues.page(QUEUE, 0, 100, newest_first=False)]


def kinds(broker: Broker) -> list[str]:
    return [job["class"].removeprefix("on_") for job in pushed(broker)]


def seal(store: BatchStore, bid: str, members: list[str], *callbacks: CallbackKind) -> Any:
    return store.register(bid, members, time.time(), TTL, spec=spec(bid, *callbacks))


ALL: tuple[CallbackKind, ...] = ("success", "complete", "death")


def test_the_last_success_fires_complete_then_success_once_with_bid_counts_and_extra(
        store: BatchStore, broker: Broker) -> None:
    seal(store, "b1", ["j1", "j2"], *ALL)
    first = store.settle("b1", "j1", "success", time.time(), TTL, QUEUE)
    assert first.fired == () and kinds(broker) == []

    last = store.settle("b1", "j2", "success", time.time(), TTL, QUEUE)

    assert last.fired == ("complete", "success")
    assert kinds(broker) == ["complete", "success"]
    callback = pushed(broker)[0]
    assert callback["args"] == ["b1", {"total": 2, "pending": 0, "succeeded": 2, "failed": 0,
                                       "dead": 0}, 7, "x"]
    assert isinstance(callback["enqueued_at"], float) and callback["jid"] == "cb-complete"
    assert QUEUE in broker.queues.names()


def test_every_step_is_idempotent_per_member(store: BatchStore, broker: Broker) -> None:
    seal(store, "b1", ["j1"], *ALL)
    for _ in range(3):
        store.settle("b1", "j1", "success", time.time(), TTL, QUEUE)
        seal(store, "b1", ["j1"], *ALL)

    assert kinds(broker) == ["complete", "success"]
    info = store.get("b1")
    assert info is not None and info.counts.total == 1 and info.state == "success"


def test_a_first_failure_counts_for_complete_and_a_later_success_for_success(
        store: BatchStore, broker: Broker) -> None:
    seal(store, "b1", ["j1", "j2"], *ALL)
    store.settle("b1", "j1", "success", time.time(), TTL, QUEUE)
    failed = store.settle("b1", "j2", "failure", time.time(), TTL, QUEUE)
    assert failed.fired == ("complete",)
    info = store.get("b1")
    assert info is not None and (info.counts.failed, info.counts.pending) == (1, 1)
    assert info.state == "complete"

    store.settle("b1", "j2", "failure", time.time(), TTL, QUEUE)  # its second attempt
    retried = store.settle("b1", "j2", "success", time.time(), TTL, QUEUE)

    assert retried.fired == ("success",)
    assert kinds(broker) == ["complete", "success"]
    done = store.get("b1")
    assert done is not None and done.counts.failed == 0 and done.counts.succeeded == 2


def test_a_death_fires_death_and_complete_but_never_success(store: BatchStore,
                                                            broker: Broker) -> None:
    seal(store, "b1", ["j1", "j2", "j3"], *ALL)
    store.settle("b1", "j1", "failure", time.time(), TTL, QUEUE)
    died = store.settle("b1", "j1", "dead", time.time(), TTL, QUEUE)
    assert died.fired == ("death",)
    store.settle("b1", "j2", "dead", time.time(), TTL, QUEUE)  # a second death: no callback
    last = store.settle("b1", "j3", "success", time.time(), TTL, QUEUE)

    assert last.fired == ("complete",)
    assert kinds(broker) == ["death", "complete"]
    info = store.get("b1")
    assert info is not None and (info.counts.dead, info.counts.failed) == (2, 0)
    assert info.fired.keys() == {"death", "complete"}


def test_outcomes_before_the_seal_count_at_the_seal(store: BatchStore, broker: Broker) -> None:
    early = store.settle("b1", "j1", "success", time.time(), TTL, QUEUE)
    assert (early.sealed, early.fired) == (False, ())
    store.settle("b1", "j2", "failure", time.time(), TTL, QUEUE)
    store.settle("b1", "j3", "dead", time.time(), TTL, QUEUE)
    assert store.get("b1") is None

    sealed = seal(store, "b1", ["j1", "j2", "j3"], *ALL)

    assert sealed.fired == ("death", "complete")
    info = store.get("b1")
    assert info is not None
    assert (info.counts.succeeded, info.counts.failed, info.counts.dead) == (1, 1, 1)


def test_an_outcome_of_a_jid_outside_the_batch_changes_no_count(store: BatchStore,
                                                                broker: Broker) -> None:
    seal(store, "b1", ["j1"], *ALL)
    store.settle("b1", "stray", "dead", time.time(), TTL, QUEUE)  # its registration lost

    assert kinds(broker) == []
    info = store.get("b1")
    assert info is not None and (info.counts.total, info.counts.dead) == (1, 0)


def test_adding_members_to_a_sealed_batch_reopens_it(store: BatchStore,
                                                     broker: Broker) -> None:
    seal(store, "b1", ["j1"], *ALL)
    store.register("b1", ["j2"], time.time(), TTL, callback_queue=QUEUE)  # j1 adds j2
    store.settle("b1", "j1", "success", time.time(), TTL, QUEUE)
    assert kinds(broker) == []

    store.settle("b1", "j2", "success", time.time(), TTL, QUEUE)

    assert kinds(broker) == ["complete", "success"]


def test_an_empty_batch_completes_and_succeeds_at_its_seal(store: BatchStore,
                                                           broker: Broker) -> None:
    update = seal(store, "b1", [], "complete", "success")
    assert update.fired == ("complete", "success")
    assert update.parent_outcomes() == ("success",)


def test_a_cancelled_batch_fires_nothing_and_is_listed_as_cancelled(
        store: BatchStore, broker: Broker) -> None:
    seal(store, "b1", ["j1"], *ALL)
    now = time.time()
    assert store.cancel("b1", now, TTL) is True
    assert store.cancel("unknown", now, TTL) is False

    update = store.settle("b1", "j1", "success", time.time(), TTL, QUEUE)

    assert (update.cancelled, update.fired) == (True, ())
    assert kinds(broker) == []
    info = store.get("b1")
    assert info is not None and info.state == "cancelled"
    assert store.cancelled_since(now - 1) == {"b1"}
    assert store.cancelled_since(now + 60) == set()


def test_a_child_reports_its_parent_and_what_it_means_there(store: BatchStore) -> None:
    seal(store, "parent", ["batch:child"], *ALL)
    store.register("child", ["j1"], time.time(), TTL, spec=spec("child", parent="parent"))

    update = store.settle("child", "j1", "failure", time.time(), TTL, QUEUE)

    assert update.parent == "parent" and update.parent_callback_queue == QUEUE
    assert update.parent_outcomes() == ("failure",)
    died = store.settle("child", "j1", "dead", time.time(), TTL, QUEUE)
    assert died.parent_outcomes() == ("death", "failure")


def test_members_and_batches_page(store: BatchStore) -> None:
    seal(store, "old", ["j3", "j1", "j2"])
    store.settle("old", "j2", "success", time.time(), TTL, QUEUE)
    store.register("new", ["k1"], time.time() + 1, TTL,
                   spec=BatchSpec(bid="new", created_at=time.time() + 1))

    assert store.members("old", "all", 0, 2) == (["j1", "j2"], 3)
    assert store.members("old", "pending", 0, 10) == (["j1", "j3"], 2)
    assert store.members("old", "succeeded", 0, 10) == (["j2"], 1)
    records, total = store.page(0, 10)
    assert [r.bid for r in records] == ["new", "old"] and total == 2
    assert records[1].description == "batch old" and records[1].callback_queue == QUEUE


def test_delete_waiting_removes_only_the_batchs_jobs(store: BatchStore, broker: Broker) -> None:
    mine = encode({"class": "w", "jid": "a", "bid": "b1", "args": []})
    other = encode({"class": "w", "jid": "b", "bid": "b2", "args": []})
    later = encode({"class": "w", "jid": "c", "bid": "b1", "args": [], "at": 1e12})
    broker.queues.store([("q", mine), ("q", other)], [(1e12, later)])

    assert store.delete_waiting("b1", ["q"]) == 2

    assert broker.queues.page("q", 0, 10) == [other]
    assert broker.sets.size("schedule") == 0
