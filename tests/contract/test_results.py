"""``broker.extension(RESULTS)``: workflow results and records, on every broker."""

from __future__ import annotations

import pytest

from cogworker.core.broker import RESULTS, Broker, FinishedStep, NextStep, ResultStore
from cogworker.core.broker.results import READ_LIMIT
from contract.conftest import StoreTime

TTL = 60.0


@pytest.fixture
def store(broker: Broker) -> ResultStore:
    found = broker.extension(RESULTS)
    assert found is not None, f"the {broker.name} broker has no results facet"
    return found


def step(jid: str, result: str = "1", *, step: int = 0, last: bool = False,
         next_raw: str | None = None, ttl: float = TTL) -> FinishedStep:
    pushed = NextStep("wf-next", next_raw) if next_raw is not None else None
    return FinishedStep(workflow_id="wf1", step=step, jid=jid, result=result, ttl=ttl,
                        next=pushed, last=last)


def test_a_finished_step_stores_its_result_and_pushes_the_next_once(
        broker: Broker, store: ResultStore) -> None:
    store.start("wf1", steps=2, ttl=TTL)

    first = store.finish_step(step("j1", '{"n": 1}', next_raw='{"jid":"j2"}'))
    again = store.finish_step(step("j1", '{"n": 2}', next_raw='{"jid":"j2"}'))

    assert (first, again) == ("finished", "already")
    assert store.results(["j1"]) == ['{"n": 1}']  # the first run's result is kept
    assert broker.queues.page("wf-next", 0, 10) == ['{"jid":"j2"}']
    assert "wf-next" in broker.queues.names()
    record = store.workflow("wf1")
    assert record is not None
    assert (record.state, record.steps, record.finished) == ("running", 2, 1)


def test_the_last_step_makes_the_workflow_succeed_with_its_result(store: ResultStore) -> None:
    store.start("wf1", steps=2, ttl=TTL)
    store.finish_step(step("j1", "3", next_raw='{"jid":"j2"}'))

    assert store.finish_step(step("j2", "[3, 4]", step=1, last=True)) == "finished"

    record = store.workflow("wf1")
    assert record is not None
    assert (record.state, record.finished, record.result_jid) == ("succeeded", 2, "j2")
    assert store.results(["j1", "j2", "never"]) == ["3", "[3, 4]", None]


def test_a_failed_workflow_stores_results_but_pushes_nothing(
        broker: Broker, store: ResultStore) -> None:
    store.start("wf1", steps=3, ttl=TTL)

    assert store.fail("wf1", 1, "ValueError: no", TTL) is True
    assert store.fail("wf1", 2, "later", TTL) is False  # the first failure is kept
    assert store.finish_step(step("j1", "1", next_raw='{"jid":"j2"}')) == "stopped"

    assert broker.queues.page("wf-next", 0, 10) == []
    record = store.workflow("wf1")
    assert record is not None
    assert (record.state, record.failed_step, record.error) == ("failed", 1, "ValueError: no")
    assert store.results(["j1"]) == ["1"]


def test_a_succeeded_workflow_cannot_fail(store: ResultStore) -> None:
    store.start("wf1", steps=1, ttl=TTL)
    store.finish_step(step("j1", "null", last=True))

    assert store.fail("wf1", 0, "too late", TTL) is False
    record = store.workflow("wf1")
    assert record is not None and record.state == "succeeded"


def test_results_and_records_expire(store: ResultStore, store_time: StoreTime) -> None:
    store.start("wf1", steps=1, ttl=1.0)
    store.finish_step(step("j1", "1", last=True, ttl=1.0))

    store_time(1.2)

    assert store.results(["j1"]) == [None]
    assert store.workflow("wf1") is None


def test_unknown_workflows_and_bad_arguments(store: ResultStore) -> None:
    assert store.workflow("never") is None
    assert store.results([]) == []
    with pytest.raises(ValueError, match="at most"):
        store.results(["j"] * (READ_LIMIT + 1))
    with pytest.raises(ValueError, match="TTL"):
        store.start("wf1", steps=1, ttl=0)


def test_a_group_succeeds_once_every_member_finished(store: ResultStore) -> None:
    store.start("wf1", steps=2, ttl=TTL)
    member = FinishedStep(workflow_id="wf1", step=0, jid="m0", result="0", ttl=TTL,
                          completes_group=True)

    store.finish_step(member)
    after_one = store.workflow("wf1")
    store.finish_step(FinishedStep(workflow_id="wf1", step=1, jid="m1", result="1", ttl=TTL,
                                   completes_group=True))

    assert after_one is not None and after_one.state == "running"
    record = store.workflow("wf1")
    assert record is not None
    assert (record.state, record.finished, record.result_jid) == ("succeeded", 2, None)
