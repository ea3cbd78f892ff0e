"""``broker.extension(RESULTS)`` in memory: results and workflow records, each gone at its
expiry on the broker's clock; a finished step's push goes onto the broker's own queues
under the same lock, so finishing a step is as atomic as on Redis (in the fake and inline
test modes it is handed to the mode instead, as a batch's callback is:
:meth:`~cogworker.testing.memory_broker.state.MemoryState.broker_pushes`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cogworker.core.broker.results import (
    READ_LIMIT,
    FinishedStep,
    FinishOutcome,
    WorkflowRecord,
)
from cogworker.testing.memory_broker.state import MemoryState


def _check_ttl(ttl: float) -> None:
    if not ttl > 0:
        raise ValueError(f"a result TTL must be > 0 seconds, not {ttl!r}")


class MemoryResultStore:
    """:class:`cogworker.core.broker.ResultStore` in one memory broker's state."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state
        self._results: dict[str, tuple[str, float]] = {}
        self._workflows: dict[str, tuple[WorkflowRecord, float]] = {}

    def _live_result(self, jid: str) -> str | None:
        kept = self._results.get(jid)
        if kept is None or kept[1] <= self._state.now():
            self._results.pop(jid, None)
            return None
        return kept[0]

    def _live_workflow(self, workflow_id: str) -> WorkflowRecord | None:
        kept = self._workflows.get(workflow_id)
        if kept is None or kept[1] <= self._state.now():
            self._workflows.pop(workflow_id, None)
            return None
        return kept[0]

    def start(self, workflow_id: str, steps: int, ttl: float) -> None:
        _check_ttl(ttl)
        with self._state.lock:
            record = WorkflowRecord(workflow_id=workflow_id, state="running", steps=steps)
            self._workflows[workflow_id] = (record, self._state.now() + ttl)

    def finish_step(self, finished: FinishedStep) -> FinishOutcome:
        _check_ttl(finished.ttl)
        state = self._state
        with state.broker_pushes() as pushes:  # the next step: a push the broker makes itself
            if self._live_result(finished.jid) is not None:
                return "already"
            until = state.now() + finished.ttl
            self._results[finished.jid] = (finished.result, until)
            record = self._live_workflow(finished.workflow_id) or WorkflowRecord(
                workflow_id=finished.workflow_id, state="running", steps=0)
            record = dataclasses.replace(record, finished=record.finished + 1)
            outcome: FinishOutcome = "stopped" if record.state == "failed" else "finished"
            if outcome == "finished" and finished.last:
                record = dataclasses.replace(record, state="succeeded",
                                             result_jid=finished.jid)
            elif outcome == "finished" and finished.completes_group and \
                    record.finished >= record.steps:
                record = dataclasses.replace(record, state="succeeded")
            self._workflows[finished.workflow_id] = (record, until)
            if outcome == "finished" and finished.next is not None:
                pushes.append((finished.next.queue, finished.next.raw))
        return outcome

    def fail(self, workflow_id: str, step: int, error: str, ttl: float) -> bool:
        _check_ttl(ttl)
        with self._state.lock:
            record = self._live_workflow(workflow_id) or WorkflowRecord(
                workflow_id=workflow_id, state="running", steps=0)
            if record.state != "running":
                return False
            failed = dataclasses.replace(record, state="failed", failed_step=step,
                                         error=error)
            self._workflows[workflow_id] = (failed, self._state.now() + ttl)
            return True

    def workflow(self, workflow_id: str) -> WorkflowRecord | None:
        with self._state.lock:
            return self._live_workflow(workflow_id)

    def results(self, jids: Sequence[str]) -> list[str | None]:
        if len(jids) > READ_LIMIT:
            raise ValueError(f"read at most {READ_LIMIT} results at once, not {len(jids)}")
        with self._state.lock:
            return [self._live_result(jid) for jid in jids]
